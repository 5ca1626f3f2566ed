"""Fair-share groups (`submit(..., group=)`, `configure_group`, a group's pause,
`get_groups`): the take goes round robin between groups, each under its own
limits, with exact counts and no key left behind (against a real redis-server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
import redis

import worqr
from tests.client.test_extreme_options import snapshot
from tests.support.mesh import queue_keys
from worqr._jobs import JobProcess

Make = Callable[..., worqr.Worqr]


def take(worker: worqr.Worqr, n: int = 1, queue: str = "q") -> list[JobProcess]:
    _, taken, _ = worker.internals.take_jobs(queue, [], n)
    return taken


def finish(worker: worqr.Worqr, held: list[JobProcess], queue: str = "q") -> None:
    worker.internals.take_jobs(queue, [(p, "s", b"ok") for p in held], 0)


def payloads(taken: list[JobProcess]) -> list[str]:
    return [str(p.task) for p in taken]


def group_keys(raw: redis.Redis, prefix: str, queue: str = "q") -> list[bytes]:
    tag = queue_keys(prefix, queue).tag
    return sorted(raw.scan_iter(match=f"{tag}:grp*"))


def test_round_robin_between_three_groups_and_ungrouped_jobs(make: Make) -> None:
    producer, worker = make(), make(start=True)
    producer.submit_many("q", ["u1", "u2"])  # ungrouped first: the member ""
    producer.submit_many("q", ["a1", "a2", "a3"], group="a")
    producer.submit_many("q", ["b1"], group="b")
    producer.submit_many("q", ["c1", "c2"], group="c")
    order = [payloads(take(worker))[0] for _ in range(8)]
    assert order == ["u1", "a1", "b1", "c1", "u2", "a2", "c2", "a3"]
    assert take(worker) == []


def test_a_flood_in_one_group_delays_another_by_one_turn_at_most(make: Make) -> None:
    producer, worker = make(), make(start=True)
    producer.submit_many("q", [f"a{i}" for i in range(1000)], group="a")
    producer.submit("q", "b", group="b")
    first = payloads(take(worker, 2))
    assert first == ["a0", "b"]
    info = producer.get_job("q", producer.get_jobs("q", "active")[0][0].id)
    assert info is not None and info.group in ("a", "b")


def test_job_info_has_group_and_priority(make: Make) -> None:
    producer = make()
    ref = producer.submit("q", "x", group="tenant/1", priority=3)
    info = producer.get_job("q", ref.id)
    assert info is not None and info.group == "tenant/1" and info.priority == 3
    plain = producer.get_job("q", producer.submit("q", "y").id)
    assert plain is not None and plain.group is None and plain.priority == 0


def test_per_group_max_active_holds_under_concurrent_takes(make: Make) -> None:
    producer = make()
    producer.configure_queue("q", group_max_active=2)
    producer.configure_group("q", "b", max_active=1)
    producer.submit_many("q", [f"a{i}" for i in range(20)], group="a")
    producer.submit_many("q", [f"b{i}" for i in range(20)], group="b")
    workers = [make(start=True) for _ in range(4)]
    held: list[list[JobProcess]] = [[] for _ in workers]
    barrier = threading.Barrier(len(workers))

    def run(k: int) -> None:
        barrier.wait()
        held[k] = take(workers[k], 8)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken = [p for h in held for p in h]
    assert sorted(str(p.task)[0] for p in taken) == ["a", "a", "b"]
    groups = {g.name: g for g in producer.get_groups("q")[0]}
    assert (groups["a"].active, groups["a"].queued, groups["a"].limited) == (2, 18, True)
    assert (groups["b"].active, groups["b"].max_active) == (1, 1)
    assert take(workers[0], 8) == []  # both at their cap: nothing
    b_job = next(p for p in taken if str(p.task).startswith("b"))
    finish(workers[0], [b_job])
    again = take(workers[0], 8)
    assert payloads(again) == ["b1"]  # b came back after the finish; a still full


def test_per_group_rate_spaces_its_starts(make: Make) -> None:
    producer, worker = make(), make(start=True)
    producer.configure_group("q", "slow", rate=(1, 30.0))
    producer.submit_many("q", ["s1", "s2"], group="slow")
    producer.submit_many("q", ["f1", "f2", "f3"], group="fast")
    got = payloads(take(worker, 8))
    assert got == ["s1", "f1", "f2", "f3"]  # s2 waits for its slot, fast runs on
    limits = producer.get_limits("q", group="slow")
    assert limits.rate == (1, 30.0) and limits.closed_until is not None
    info = {g.name: g for g in producer.get_groups("q")[0]}["slow"]
    assert info.limited and info.queued == 1 and info.closed_until is not None
    assert take(worker, 8) == []


def test_rate_limited_closes_only_its_group(make: Make, redis_client: redis.Redis) -> None:
    producer, worker = make(), make(start=True)
    producer.submit_many("q", ["a1", "a2"], group="a")
    producer.submit_many("q", ["b1", "b2"], group="b")
    first = take(worker, 2)
    assert payloads(first) == ["a1", "b1"]
    a1 = next(p for p in first if p.task == "a1")
    worker.internals.fail_job(a1, mode="limited", delay=60.0, retries=0, error="RateLimited")
    got = payloads(take(worker, 8))
    assert got == ["b2"]  # a is closed, b runs on, the queue is not shut
    assert producer.get_limits("q").closed_until is None
    info = {g.name: g for g in producer.get_groups("q")[0]}["a"]
    assert info.closed_until is not None and info.delayed == 1 and info.queued == 1


def test_a_paused_group_while_others_run(make: Make) -> None:
    producer, worker = make(), make(start=True)
    producer.pause("q", group="a")  # before it has jobs
    assert producer.is_paused("q", group="a") and not producer.is_paused("q")
    producer.submit_many("q", ["a1", "a2"], group="a")
    producer.submit_many("q", ["b1", "b2"], group="b")
    assert payloads(take(worker, 8)) == ["b1", "b2"]
    assert {g.name: g.paused for g in producer.get_groups("q")[0]} == {"a": True, "b": False}
    producer.resume("q", group="a")
    assert not producer.is_paused("q", group="a")
    assert payloads(take(worker, 8)) == ["a1", "a2"]


def ring_and_records(raw: redis.Redis, prefix: str) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The ring's entries, front first, and each group's record."""
    tag = queue_keys(prefix, "q").tag
    entries = [g.decode() for g in raw.lrange(f"{tag}:grp:ring", 0, -1)[::-1]]
    records = {g.decode(): json.loads(rec) for g, rec in raw.hgetall(f"{tag}:grp").items()}
    return entries, records


def lrem_calls(raw: redis.Redis) -> int:
    return int(raw.info("commandstats").get("cmdstat_lrem", {}).get("calls", 0))


def test_pause_and_rate_limited_leave_the_ring_in_o1_never_twice(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """A pause and a RateLimited take a group out of the ring without an LREM
    (O(ring)): its entry stays behind (k) until the pick comes to it and drops it,
    or until the group comes back and takes it up again. Through it all each
    group is in the ring at most once, and a group the pick may serve ('r') is in
    it exactly once."""
    producer, worker = make(), make(start=True)

    def check() -> tuple[list[str], dict[str, dict[str, Any]]]:
        entries, records = ring_and_records(redis_client, prefix)
        assert len(entries) == len(set(entries)), entries  # at most once
        for g, rec in records.items():
            assert (g in entries) == (rec.get("w") == "r" or bool(rec.get("k"))), (g, rec)
        return entries, records

    for g in "abc":
        producer.submit_many("q", [f"{g}1", f"{g}2", f"{g}3"], group=g)
    redis_client.config_resetstat()
    producer.pause("q", group="a")
    entries, records = check()
    assert "a" in entries and records["a"].get("k") == 1 and "w" not in records["a"]
    producer.resume("q", group="a")  # back before the pick came: its old entry
    entries, records = check()
    assert entries.count("a") == 1 and records["a"]["w"] == "r" and "k" not in records["a"]
    producer.pause("q", group="a")
    producer.submit("q", "a4", group="a")  # paused: it does not join
    held = take(worker, 8)
    assert sorted(payloads(held)) == ["b1", "b2", "b3", "c1", "c2", "c3"]
    finish(worker, held)
    entries, records = check()
    assert "a" not in entries and "k" not in records["a"]  # the pick dropped it
    producer.resume("q", group="a")
    entries, _ = check()
    assert entries == ["a"]
    assert lrem_calls(redis_client) == 0

    [a1] = take(worker, 1)
    worker.internals.fail_job(a1, mode="limited", delay=60.0, retries=0, error="RateLimited")
    entries, records = check()
    assert entries == ["a"] and records["a"]["w"] == "t" and records["a"]["k"] == 1
    assert take(worker, 8) == []  # a is shut: the pick drops its entry
    entries, records = check()
    assert entries == [] and "k" not in records["a"]
    assert lrem_calls(redis_client) == 0

    # Shut, then emptied before the pick came: the record goes, its entry with it.
    producer.submit_many("q", ["b4", "b5"], group="b")
    [b4] = take(worker, 1)
    worker.internals.fail_job(b4, mode="limited", delay=60.0, retries=0, error="RateLimited")
    entries, records = check()
    assert entries == ["b"] and records["b"]["k"] == 1
    assert producer.cancel_jobs("q") == 6  # a1..a4, b4 and b5
    entries, records = check()
    assert entries == [] and records == {}
    assert lrem_calls(redis_client) == 1  # the one record that went with its entry


def test_counts_exact_and_no_key_left_after_a_drain(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    before = set(redis_client.scan_iter(match="*"))
    refs = producer.submit_many("q", [f"a{i}" for i in range(5)], group="a", priority=0)
    producer.submit_many("q", ["p1", "p2"], group="a", priority=5)
    producer.submit_many("q", ["d1"], group="b", delay=0.05)
    producer.submit_many("q", ["u1"])
    assert producer.cancel_job("q", refs[1].id)  # a tombstone in a's list
    groups = {g.name: g for g in producer.get_groups("q")[0]}
    assert (groups["a"].queued, groups["b"].delayed) == (6, 1)
    held: list[JobProcess] = []
    seen: list[str] = []
    for _ in range(100):
        _, held, _ = worker.internals.take_jobs("q", [(p, "s", b"ok") for p in held], 3)
        seen += payloads(held)
        if len(seen) == 8 and not held:
            break
        if not held:
            worker.internals.promote_due("q")
    assert sorted(seen) == sorted(["a0", "a2", "a3", "a4", "p1", "p2", "d1", "u1"])
    assert seen.index("p1") < seen.index("a0")  # priority first inside a group
    assert producer.get_groups("q") == ([], None)
    assert group_keys(redis_client, prefix) == []
    assert redis_client.hget(queue_keys(prefix, "q").config, "groups") is None
    leftover = {k for k in redis_client.scan_iter(match="*grp*")} - before
    assert leftover == set()


def test_delete_queue_removes_group_keys(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer = make()
    producer.submit_many("q", ["a1", "a2"], group="a")
    producer.submit("q", "b1", group="b", priority=2)
    producer.configure_group("q", "c", max_active=1)
    assert group_keys(redis_client, prefix)
    producer.delete_queue("q")
    assert group_keys(redis_client, prefix) == []


@pytest.mark.parametrize("bad", ["", "x" * 257, "a\nb", 7, b"a"])
def test_a_bad_group_writes_nothing(
    make: Make, redis_client: redis.Redis, prefix: str, bad: object
) -> None:
    producer = make()
    producer.submit("q", "warm")
    before = snapshot(redis_client, prefix)
    with pytest.raises((ValueError, TypeError), match="group"):
        producer.submit("q", "x", group=bad)  # type: ignore[arg-type]
    with pytest.raises((ValueError, TypeError), match="group"):
        producer.submit_many("q", ["x", "y"], group=bad)  # type: ignore[arg-type]
    with pytest.raises((ValueError, TypeError), match="group"):
        producer.configure_group("q", bad, max_active=1)  # type: ignore[arg-type]
    with pytest.raises((ValueError, TypeError), match="group"):
        producer.pause("q", group=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_active"):
        producer.configure_group("q", "g", max_active=0)
    with pytest.raises(ValueError, match="max_active"):
        producer.configure_queue("q", group_max_active=0)
    assert snapshot(redis_client, prefix) == before
