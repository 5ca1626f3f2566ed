"""Bulk operations on a queue with fair-share groups: cancel_jobs, promote_jobs,
retry_jobs, purge_jobs, update_job and delete_queue(if_idle=True) reach every
group's ready keys, keep the queue's and each group's counts exact (between the
chunks too), keep the ring consistent (a drain afterwards runs every job once,
round robin) and leave no group key behind (against a real redis-server)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

import worqr
from tests.support.mesh import queue_keys
from worqr._core.bulk import BULK_CHUNK
from worqr._jobs import JobProcess

from .test_bulk import observed
from .test_groups import Make, group_keys, payloads, take
from .test_lifecycle import counts

GROUPS = ("a", "b", "c")
PER_GROUP = 500  # 1,500 over three groups: more than one chunk


def ring(raw: redis.Redis, prefix: str) -> list[bytes]:
    """The groups in the ring, front first."""
    return raw.lrange(f"{queue_keys(prefix, 'q').tag}:grp:ring", 0, -1)[::-1]


def group_counts(producer: worqr.Worqr) -> dict[str, tuple[int, int, int]]:
    """Each listed group's (queued, delayed, active)."""
    found: dict[str, tuple[int, int, int]] = {}
    cursor: str | None = None
    while True:
        page, cursor = producer.get_groups("q", limit=100, cursor=cursor)
        found.update({g.name: (g.queued, g.delayed, g.active) for g in page})
        if cursor is None:
            return found


def fill(
    producer: worqr.Worqr, per_group: int = PER_GROUP, ungrouped: int = 0, **opts: Any
) -> None:
    """``per_group`` jobs in each of a, b, c (a fifth of each with a priority) and
    ``ungrouped`` jobs without a group; payloads name their group ('u': none)."""
    for g in GROUPS:
        high = per_group // 5
        producer.submit_many("q", [f"{g}:{i}" for i in range(high)], group=g, priority=2, **opts)
        producer.submit_many("q", [f"{g}:{i}" for i in range(high, per_group)], group=g, **opts)
    if ungrouped:
        producer.submit_many("q", [f"u:{i}" for i in range(ungrouped)], **opts)


def drain(worker: worqr.Worqr) -> list[str]:
    """Take and finish one job at a time until none is left: the payloads in order."""
    seen: list[str] = []
    held: list[JobProcess] = []
    while True:
        _, held, _ = worker.internals.take_jobs("q", [(p, "s", b"ok") for p in held], 1)
        if not held:
            return seen
        seen += payloads(held)


def assert_round_robin(seen: list[str], members: int) -> None:
    """Every member once per turn: the members' order repeats with their number."""
    owners = [s.split(":")[0] for s in seen]
    assert len(set(owners[:members])) == members, owners[: 2 * members]
    assert all(owners[i] == owners[i % members] for i in range(len(owners))), owners[:40]
    assert len(seen) == len(set(seen))  # each job exactly once


def assert_no_group_key(raw: redis.Redis, prefix: str, producer: worqr.Worqr) -> None:
    assert group_keys(raw, prefix) == []
    assert [k for k in raw.scan_iter(match=f"{prefix}*grp*")] == []
    assert producer.get_groups("q") == ([], None)


def test_cancel_queued_reaches_every_group_in_chunks(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, reader, worker = make(), make(), make(start=True)
    fill(producer, ungrouped=300)
    fill(producer, per_group=10, delay=600)  # delayed in each group: they stay
    total = 3 * PER_GROUP + 300
    assert 3 * PER_GROUP > BULK_CHUNK
    readings: list[tuple[dict[str, int], dict[str, tuple[int, int, int]]]] = []
    plan = producer._core.bulk.cancel_jobs("q", state="queued")
    cancelled = producer._drive(
        observed(
            plan,
            "job_cancel_many",
            lambda: readings.append((reader.count_jobs("q"), group_counts(reader))),
        )
    )
    assert cancelled == total
    # Between chunks: the queue's counts add up, each group's queued count is
    # what the queue's grouped queued jobs are (the ungrouped go first).
    assert len(readings) >= 2
    assert any(0 < r[0]["queued"] < total for r in readings)  # seen mid-way
    for queue_counts, groups in readings:
        assert sum(queue_counts.values()) == total + 30
        grouped_queued = sum(q for q, _, _ in groups.values())
        assert grouped_queued <= queue_counts["queued"] <= grouped_queued + 300
        assert all(d == 10 and a == 0 for _, d, a in groups.values())
    assert producer.count_jobs("q") == counts(delayed=30, cancelled=total)
    assert group_counts(producer) == {g: (0, 10, 0) for g in GROUPS}
    assert ring(redis_client, prefix) == []  # nothing queued: no member in the ring
    assert drain(worker) == []
    # The delayed ones come out, round robin, each once.
    assert producer.promote_jobs("q") == 30
    assert group_counts(producer) == {g: (10, 0, 0) for g in GROUPS}
    seen = drain(worker)
    assert sorted(seen) == sorted(f"{g}:{i}" for g in GROUPS for i in range(10))
    assert_round_robin(seen, 3)
    assert producer.count_jobs("q") == counts(finished=30, cancelled=total)
    assert_no_group_key(redis_client, prefix, producer)


def test_cancel_everything_then_purge_leaves_no_group_key(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    fill(producer, ungrouped=200)
    fill(producer, per_group=20, delay=600)
    producer.pause("q", group="c")  # a paused group's jobs are cancelled too
    active = take(worker, 4)
    total = 3 * PER_GROUP + 200 + 60
    assert producer.count_jobs("q") == counts(queued=total - 64, delayed=60, active=4)
    producer.resume("q", group="c")
    assert producer.cancel_jobs("q") == total
    assert producer.count_jobs("q") == counts(cancelled=total)
    assert producer.get_groups("q") == ([], None)
    assert_no_group_key(redis_client, prefix, producer)
    assert producer.purge_jobs("q", "cancelled") == total
    assert producer.count_jobs("q") == counts()
    assert_no_group_key(redis_client, prefix, producer)
    assert len(active) == 4
    # The queue works as before: a new group and ungrouped jobs, round robin.
    producer.submit_many("q", ["u:1", "u:2"])
    producer.submit_many("q", ["a:1", "a:2"], group="a")
    assert_round_robin(drain(worker), 2)
    assert_no_group_key(redis_client, prefix, producer)


def test_promote_jobs_moves_grouped_jobs_into_their_groups(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    per = 400  # 1,200 grouped delayed jobs: more than a chunk
    fill(producer, per_group=per, delay=600)
    producer.submit_many("q", [f"u:{i}" for i in range(per)], delay=600)
    assert group_counts(producer) == {g: (0, per, 0) for g in GROUPS}
    assert producer.promote_jobs("q") == 4 * per
    assert producer.count_jobs("q") == counts(queued=4 * per)
    assert group_counts(producer) == {g: (per, 0, 0) for g in GROUPS}
    seen = drain(worker)
    assert sorted(seen) == sorted(
        [f"{g}:{i}" for g in GROUPS for i in range(per)] + [f"u:{i}" for i in range(per)]
    )
    assert_round_robin(seen, 4)
    assert producer.count_jobs("q") == counts(finished=4 * per)
    assert_no_group_key(redis_client, prefix, producer)


def test_retry_jobs_revives_grouped_jobs_into_their_groups(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    fill(producer, ungrouped=PER_GROUP)
    total = 4 * PER_GROUP
    assert producer.cancel_jobs("q") == total
    assert_no_group_key(redis_client, prefix, producer)
    assert producer.retry_jobs("q", state="cancelled") == total
    assert producer.count_jobs("q") == counts(queued=total)
    assert group_counts(producer) == {g: (PER_GROUP, 0, 0) for g in GROUPS}
    seen = drain(worker)
    assert len(seen) == total
    assert_round_robin(seen, 4)
    assert producer.count_jobs("q") == counts(finished=total)
    assert_no_group_key(redis_client, prefix, producer)


def test_update_job_moves_a_grouped_job_and_its_group(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    a = producer.submit_many("q", ["a:1", "a:2", "a:3"], group="a")
    [b] = producer.submit_many("q", ["b:1"], group="b")
    [d] = producer.submit_many("q", ["c:1"], group="c", delay=600)
    # A new priority: first inside its group, nothing else moves.
    assert producer.update_job("q", a[2].id, priority=5)
    assert group_counts(producer) == {"a": (3, 0, 0), "b": (1, 0, 0), "c": (0, 1, 0)}
    # Queued -> delayed: the group's counts move, an emptied group leaves the ring.
    assert producer.update_job("q", b.id, delay=600)
    assert group_counts(producer)["b"] == (0, 1, 0)
    assert b"b" not in ring(redis_client, prefix)
    assert producer.update_job("q", a[1].id, delay=600)
    assert group_counts(producer)["a"] == (2, 1, 0)
    # Delayed -> queued now: back in the counts and the ring.
    assert producer.update_job("q", b.id, delay=0)
    assert producer.update_job("q", d.id, delay=0)
    assert producer.update_job("q", a[1].id, delay=0)
    assert group_counts(producer) == {"a": (3, 0, 0), "b": (1, 0, 0), "c": (1, 0, 0)}
    assert sorted(ring(redis_client, prefix)) == [b"a", b"b", b"c"]
    assert producer.count_jobs("q") == counts(queued=5)
    seen = drain(worker)
    assert sorted(seen) == ["a:1", "a:2", "a:3", "b:1", "c:1"]
    assert [s for s in seen if s.startswith("a")] == ["a:3", "a:1", "a:2"]
    assert_round_robin(seen[:3], 3)
    assert_no_group_key(redis_client, prefix, producer)


def test_purge_jobs_leaves_the_live_groups_as_they_are(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    fill(producer, per_group=10)
    producer.submit_many("q", ["x:1", "x:2"], group="x")
    assert producer.cancel_jobs("q", state="queued") == 32
    fill(producer, per_group=10)
    assert producer.purge_jobs("q", "cancelled") == 32
    assert group_counts(producer) == {g: (10, 0, 0) for g in GROUPS}
    seen = drain(worker)
    assert len(seen) == 30
    assert_round_robin(seen, 3)
    assert_no_group_key(redis_client, prefix, producer)


def test_delete_queue_if_idle_with_groups(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    fill(producer, per_group=5, ungrouped=2)
    held = take(worker, 1)
    with pytest.raises(worqr.QueueBusyError):
        producer.delete_queue("q", if_idle=True)
    assert group_counts(producer)
    worker.internals.take_jobs("q", [(p, "s", b"ok") for p in held], 0)
    producer.delete_queue("q", if_idle=True)
    assert_no_group_key(redis_client, prefix, producer)
    assert producer.count_jobs("q") == counts()


def test_cancel_queued_walks_the_groups_page_by_page(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """Past a listpack's size the groups' hash is scanned in pages: a page of
    groups with nothing queued (nothing cancelled by that call) does not end the
    cancel; the groups with queued jobs on a later page are reached."""
    producer, worker = make(), make(start=True)
    listpack = int(
        redis_client.config_get("hash-max-listpack-entries")["hash-max-listpack-entries"]
    )
    n = max(300, listpack + 150)
    for i in range(n):
        producer.submit("q", f"g{i}:d", group=f"g{i}", delay=600)
    grp = f"{queue_keys(prefix, 'q').tag}:grp"
    cursor, last_page = 0, []
    while True:
        cursor, page = redis_client.hscan(grp, cursor, count=100)
        if cursor == 0:
            last_page = sorted(k.decode() for k in page)
            break
    assert len(last_page) < n  # several pages
    busy = last_page[:3]
    for g in busy:
        producer.submit_many("q", [f"{g}:{i}" for i in range(400)], group=g)
    assert producer.cancel_jobs("q", state="queued") == 1200
    assert producer.count_jobs("q") == counts(delayed=n, cancelled=1200)
    assert all(c == (0, 1, 0) for c in group_counts(producer).values())
    assert ring(redis_client, prefix) == []
    assert producer.cancel_jobs("q", state="delayed") == n
    assert_no_group_key(redis_client, prefix, producer)
    assert drain(worker) == []


def test_a_bulk_cancel_takes_the_emptied_groups_out_of_the_ring_together(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """Groups a cancel chunk empties leave the ring in one pass (lib/sweep's
    leave_ring_all), not one LREM each (O(ring) each: O(groups * ring) in all).
    Between the chunks the ring holds each group at most once, exactly the groups
    whose record says 'r', in the order it had (the rotation goes on)."""
    producer, worker = make(), make(start=True)
    n = BULK_CHUNK + 500  # more groups than a chunk: several calls empty groups
    for i in range(n):
        producer.submit("q", f"g{i}:0", group=f"g{i}")
    producer.submit_many("q", ["u:0", "u:1"])  # ungrouped: the member ''
    before = ring(redis_client, prefix)
    assert len(before) == n + 1 and len(set(before)) == n + 1
    grp = f"{queue_keys(prefix, 'q').tag}:grp"
    checked: list[int] = []

    def consistent() -> None:
        now = ring(redis_client, prefix)
        assert len(now) == len(set(now))  # each group at most once
        records = {g: json.loads(raw) for g, raw in redis_client.hgetall(grp).items()}
        assert set(now) == {g for g, rec in records.items() if rec.get("w") == "r"}
        kept = set(now)
        assert now == [g for g in before if g in kept]  # the rotation's order kept
        checked.append(len(now))

    redis_client.config_resetstat()
    plan = producer._core.bulk.cancel_jobs("q", state="queued")
    assert producer._drive(observed(plan, "job_cancel_many", consistent)) == n + 2
    lrem = redis_client.info("commandstats").get("cmdstat_lrem", {}).get("calls", 0)
    assert lrem <= len(checked)  # at most one per call, never one per group
    assert checked[-1] == 0 and any(0 < left < n for left in checked)  # seen mid-way
    assert ring(redis_client, prefix) == []
    assert drain(worker) == []
    assert_no_group_key(redis_client, prefix, producer)
