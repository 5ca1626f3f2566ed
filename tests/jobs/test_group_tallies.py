"""The per-queue counts of groups waiting and limited that the group scripts
keep in the queue's config (lua/lib/group.lua's tally_groups, read by the
exporter in O(1)) stay equal to a walk of every group record, through random
submits, takes, finishes, RateLimited closes and reopens, pauses, limits,
cancels and deletes, with debounce and keep_last submits among them (against a
real redis-server)."""

from __future__ import annotations

import json
import random

import pytest
import redis

import worqr
from tests.support.mesh import queue_keys
from worqr._core.lua import NotMemberError
from worqr._jobs import JobProcess

from .test_groups import Make, take

GROUPS = ("a", "b", "c", "d", "e")


def walked(raw: redis.Redis, prefix: str) -> tuple[int, int]:
    """(waiting, limited) from every group record."""
    waiting = limited = 0
    for name, value in raw.hgetall(f"{queue_keys(prefix, 'q').tag}:grp").items():
        rec = json.loads(value)
        if name and rec["q"] > 0:
            waiting += 1
            limited += rec.get("w") in ("f", "t")
    return waiting, limited


def tallied(raw: redis.Redis, prefix: str) -> tuple[int, int]:
    config = queue_keys(prefix, "q").config
    found = raw.hmget(config, "groups_waiting", "groups_limited")
    return int(found[0] or 0), int(found[1] or 0)


class Ops:
    def __init__(self, producer: worqr.Worqr, worker: worqr.Worqr, rng: random.Random) -> None:
        self.producer, self.worker, self.rng = producer, worker, rng
        self.held: list[JobProcess] = []

    def group(self) -> str:
        return self.rng.choice(GROUPS)

    def submit(self) -> None:
        rng = self.rng
        options = {"priority": rng.choice([0, 0, 2, -1])}
        if rng.random() < 0.2:
            options["delay"] = rng.choice([0.01, 600])
        grouped = rng.random() < 0.85
        self.producer.submit_many(
            "q", ["x"] * rng.randint(1, 4), group=self.group() if grouped else None, **options
        )

    def dedup(self) -> None:
        """A debounce or keep_last submit (a follow-up while its key's job runs),
        in a group or none: follow-ups join their group when the run ends."""
        rng = self.rng
        key = f"k{rng.randint(1, 3)}"
        self.producer.submit(
            "q",
            "x",
            dedup=rng.choice(
                [worqr.Dedup(key, mode="debounce"), worqr.Dedup(key, mode="keep_last")]
            ),
            group=self.group() if rng.random() < 0.85 else None,
            delay=rng.choice([0, 0, 0, 0.01]),
        )

    def take(self) -> None:
        count = self.rng.randint(1, 4)
        try:
            self.held += take(self.worker, count)
        except NotMemberError:
            # The queue was deleted and the worker's listener had not yet heard
            # its 'delete' event (it arrives by pub/sub): the next call rejoins.
            self.held += take(self.worker, count)

    def finish(self) -> None:
        self.rng.shuffle(self.held)
        done, self.held = self.held[:2], self.held[2:]
        self.worker.internals.take_jobs("q", [(p, "s", b"") for p in done], 0)

    def rate_limited(self) -> None:
        if self.held:
            process = self.held.pop()
            self.worker.internals.fail_job(
                process, mode="limited", delay=0.02, retries=0, error="RateLimited"
            )

    def pause(self) -> None:
        group = self.group()
        if self.producer.is_paused("q", group=group):
            self.producer.resume("q", group=group)
        else:
            self.producer.pause("q", group=group)

    def limits(self) -> None:
        rng = self.rng
        self.producer.configure_group(
            "q",
            self.group(),
            max_active=rng.choice([None, 1, 2]),
            rate=rng.choice([None, (1, 0.05), (5, 1.0)]),
        )

    def defaults(self) -> None:
        self.producer.configure_queue("q", group_max_active=self.rng.choice([None, 1, 3]))

    def cancel(self) -> None:
        rng = self.rng
        state = rng.choice([None, "queued", "delayed", "active"])
        self.producer.cancel_jobs("q", state=state, group=rng.choice([None, self.group()]))
        if state in (None, "active"):
            self.held = []  # their finishes are fenced now

    def promote(self) -> None:
        self.producer.promote_jobs("q")

    def delete(self) -> None:
        self.producer.delete_queue("q")
        self.held = []


WEIGHTS = {
    "submit": 30,
    "dedup": 10,
    "take": 25,
    "finish": 15,
    "rate_limited": 5,
    "pause": 6,
    "limits": 6,
    "defaults": 3,
    "cancel": 4,
    "promote": 3,
    "delete": 1,
}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_group_tallies_match_a_walk_of_the_records(
    make: Make, redis_client: redis.Redis, prefix: str, seed: int
) -> None:
    rng = random.Random(seed)
    ops = Ops(make(), make(start=True), rng)
    names, weights = list(WEIGHTS), list(WEIGHTS.values())
    done: list[str] = []
    seen = set()
    for _ in range(400):
        name = rng.choices(names, weights)[0]
        getattr(ops, name)()
        done.append(name)
        counts = walked(redis_client, prefix)
        assert tallied(redis_client, prefix) == counts, done[-8:]
        seen.add(counts)
    assert max(w for w, _ in seen) >= 3 and max(lim for _, lim in seen) >= 2  # exercised
    ops.producer.cancel_jobs("q")
    ops.producer.configure_queue("q", group_max_active=None)
    assert tallied(redis_client, prefix) == walked(redis_client, prefix) == (0, 0)
