"""Peer failover against a real Redis: dead workers' tasks (and only theirs) go
back to the front once, zombies are fenced and re-register, one reaper per
interval, poison pills end, and failing a big worker never blocks Redis.

A worker "dies" when the test deletes (or shortens) its alive key; reaping and
heartbeats are called directly unless a test is about the timers themselves
(clients from the ``make`` fixture have `QUIET` timers).
"""

from __future__ import annotations

import logging
import math
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis

import worqr
from tests.support.clients import Factory
from tests.support.mesh import kill, queued
from tests.support.processes import stop
from tests.support.recorders import OnLeaseLost
from tests.support.scripts import runs_script
from tests.support.timing import quiet
from tests.support.waiting import wait_until
from worqr._keys import MeshKeys


def test_peer_requeues_exactly_the_dead_workers_tasks(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    doomed, peer = make(start=True), make(start=True)
    producer = make()
    producer.enqueue_many("q", [f"t{i}" for i in range(10)])
    producer.enqueue_many("other", ["o1", "o2"])
    mine = doomed.dequeue_many("q", 3) + doomed.dequeue_many("other", 1)  # t0-t2, o1
    theirs = peer.dequeue_many("q", 2)  # t3, t4
    assert [p.task for p in mine] == ["t0", "t1", "t2", "o1"]

    kill(redis_client, doomed)
    assert peer.reap() == 1
    # Exactly the dead worker's tasks came back, to the front, in their order.
    assert queued(redis_client, prefix, "q") == ["t0", "t1", "t2", "t5", "t6", "t7", "t8", "t9"]
    assert queued(redis_client, prefix, "other") == ["o1", "o2"]
    # The live worker's processes are untouched and still acknowledgeable.
    assert peer.processes_exist("q", [p.id for p in theirs]) == [True, True]
    assert producer.count_processes("q") == 2
    assert all(peer.finish_process(p) for p in theirs)
    assert producer.get_workers() == [peer.worker_id]
    assert producer.get_stats("q")["recovered"] == 3


def test_peers_fail_an_expired_worker_on_their_own(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    failed: list[dict[str, Any]] = []
    doomed = make(start=True)  # long ttl: only the shortened key below makes it expire
    peer = make(start=True, ttl=1.0, heartbeat=0.2, poll_interval=0.5)  # its heartbeat thread reaps
    peer.add_observer(lambda event, fields: failed.append(fields) if event == "peer_failed" else 0)
    producer = make()
    producer.enqueue_many("q", ["a", "b", "c"])
    assert len(doomed.dequeue_many("q", 2)) == 2

    redis_client.pexpire(MeshKeys(prefix).alive(str(doomed.worker_id)), 300)
    wait_until(lambda: producer.count_tasks("q") == 3, timeout=5, message="not failed over")
    assert queued(redis_client, prefix, "q") == ["a", "b", "c"]
    # Requeueing comes before forgetting the worker (and the event): wait for it too.
    wait_until(lambda: failed, timeout=5, message="no peer_failed event")
    assert failed == [{"worker": doomed.worker_id, "requeued": 2, "dead_lettered": 0}]
    assert producer.get_workers() == [peer.worker_id]


def test_zombie_is_fenced_then_recovers_under_a_new_id(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    zombie, peer = make(start=True), make(start=True)
    producer = make()
    producer.enqueue_many("q", ["a", "b"])
    held = zombie.dequeue("q")
    assert held is not None
    old = kill(redis_client, zombie)
    assert peer.reap() == 1

    assert zombie.finish_process(held) is False  # the task belongs to the queue again
    assert zombie.stop_process(held) is False
    assert queued(redis_client, prefix, "q") == ["a", "b"]  # no second copy
    with pytest.raises(worqr.LeaseLostError):
        zombie.dequeue("q")  # not under its old id
    assert zombie.worker_id == old

    assert zombie.heartbeat() == "recovered"
    assert zombie.worker_id not in (None, old)
    again = zombie.dequeue("q")
    assert again is not None and again.task == "a"
    assert again.worker_id == zombie.worker_id
    assert zombie.finish_process(again) is True
    assert sorted(producer.get_workers()) == sorted([peer.worker_id, zombie.worker_id])


def test_zombie_that_finds_out_first_fails_its_old_id_itself(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    zombie = make(start=True)
    producer = make()
    producer.enqueue_many("q", ["a", "b", "c"])
    held = zombie.dequeue_many("q", 2)
    old = kill(redis_client, zombie)
    assert zombie.heartbeat() == "recovered"  # nobody reaped it yet
    assert producer.get_workers() == [zombie.worker_id]
    assert [zombie.finish_process(p) for p in held] == [False, False]
    assert queued(redis_client, prefix, "q") == ["a", "b", "c"]
    assert producer.reap() == 0  # nothing left for peers: the old id is forgotten
    assert redis_client.exists(MeshKeys(prefix).worker_queues(old)) == 0


def test_concurrent_reapers_requeue_each_task_exactly_once(
    make: Factory, redis_client: redis.Redis, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    payloads = [f"task-{i}" for i in range(3000)]
    doomed = make(start=True, requeue_chunk=50)
    producer = make()
    producer.enqueue_many("q", payloads)
    producer.enqueue_many("q2", payloads[:500])
    assert len(doomed.dequeue_many("q", 3000)) == 3000
    assert len(doomed.dequeue_many("q2", 500)) == 500
    peers = [make(start=True, requeue_chunk=50) for _ in range(4)]
    kill(redis_client, doomed)

    barrier = threading.Barrier(len(peers))

    def reap(peer: worqr.Worqr) -> int:
        barrier.wait()
        return peer.reap()

    with caplog.at_level(logging.WARNING, logger="worqr"), ThreadPoolExecutor(len(peers)) as pool:
        results = list(pool.map(reap, peers))
    assert sum(results) == 1  # one of them forgot the worker
    # Each reaper logs what it returned: together, every task exactly once, and
    # the race really happened (several reapers returned chunks).
    reports = [r for r in caplog.records if str(r.msg).startswith("worker %s is dead")]
    moved = Counter[str]()
    for record in reports:
        _, count, queue, _ = record.args  # type: ignore[misc]
        moved[queue] += count
    assert moved == {"q": 3000, "q2": 500}
    assert len({record.thread for record in reports}) >= 2, "the reapers did not overlap"
    for queue, expected in (("q", payloads), ("q2", payloads[:500])):
        back = queued(redis_client, prefix, queue)
        assert Counter(back) == Counter(expected), "a task was lost or requeued twice"
        assert back == expected  # chunks are taken newest first: the order holds too
        assert producer.count_processes(queue) == 0
    assert producer.get_stats("q")["recovered"] == 3000


def test_one_reaper_per_interval(make: Factory, redis_client: redis.Redis, prefix: str) -> None:
    workers = [make(start=True) for _ in range(6)]
    reaper_key = MeshKeys(prefix).reaper
    barrier = threading.Barrier(len(workers))  # reusable: all beat at once each time

    def beat(client: worqr.Worqr) -> str:
        barrier.wait()
        return client.heartbeat()

    for _ in range(3):  # three intervals
        with ThreadPoolExecutor(len(workers)) as pool:
            results = list(pool.map(beat, workers))
        assert sorted(results) == ["ok"] * 5 + ["reaped"]
        assert all(client.heartbeat() == "ok" for client in workers)  # same interval
        holder = workers[results.index("reaped")].worker_id
        assert redis_client.get(reaper_key) == str(holder).encode()
        redis_client.delete(reaper_key)  # the interval ends


def test_the_reaper_lock_lasts_one_heartbeat_interval(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    one, two = make(start=True), make(start=True)
    assert one.heartbeat() == "reaped"
    pttl = redis_client.pttl(MeshKeys(prefix).reaper)
    assert 15_000 < pttl <= 20_000  # heartbeat=20 s: the lock outlives no interval
    assert two.heartbeat() == "ok"


def failover(
    make: Factory, raw: redis.Redis, prefix: str, reaper: worqr.Worqr, **settings: Any
) -> str | None:
    """A new worker takes the front task, dies holding it, and ``reaper`` fails it."""
    victim = make(start=True, **settings)
    process = victim.dequeue("q")
    assert process is not None
    kill(raw, victim)
    assert reaper.reap() == 1
    return str(process.task)


def test_poison_pill_is_dead_lettered_after_max_recoveries(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    reaper = make(max_recoveries=2)
    reaper.enqueue_many("q", ["pill", "fine"])
    for round_ in (1, 2):
        assert failover(make, redis_client, prefix, reaper) == "pill"
        assert queued(redis_client, prefix, "q") == ["pill", "fine"], f"round {round_}"
        assert reaper.get_failed("q") == []
    assert failover(make, redis_client, prefix, reaper) == "pill"  # the third failover
    assert queued(redis_client, prefix, "q") == ["fine"]
    assert reaper.get_failed("q") == ["pill"]
    assert reaper.count_processes("q") == 0
    stats = reaper.get_stats("q")
    assert (stats["recovered"], stats["dead_lettered"]) == (2, 1)


def test_finishing_a_task_resets_its_recoveries(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    reaper = make(max_recoveries=1)
    reaper.enqueue("q", "task")
    assert failover(make, redis_client, prefix, reaper) == "task"  # recovered once
    worker = make(start=True)
    process = worker.dequeue("q")
    assert process is not None and worker.finish_process(process)
    reaper.enqueue("q", "task")  # the same payload again starts from zero
    assert failover(make, redis_client, prefix, reaper) == "task"
    assert queued(redis_client, prefix, "q") == ["task"]


def test_configured_queue_overrides_the_reapers_setting(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    reaper = make(max_recoveries=5)
    reaper.configure_queue("q", max_recoveries=0)  # the first failover dead-letters
    reaper.enqueue("q", "pill")
    failover(make, redis_client, prefix, reaper)
    assert reaper.get_failed("q") == ["pill"]


def test_max_recoveries_minus_one_never_dead_letters(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    reaper = make(max_recoveries=0)  # would dead-letter at once
    reaper.configure_queue("q", max_recoveries=-1)  # persistent tasks: never
    reaper.enqueue("q", "connection")
    for _ in range(8):
        assert failover(make, redis_client, prefix, reaper, max_recoveries=0) == "connection"
        assert queued(redis_client, prefix, "q") == ["connection"]
    assert reaper.get_failed("q") == []
    assert reaper.get_stats("q")["recovered"] == 8


def test_failing_a_big_worker_runs_in_short_chunks(
    make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    payloads = [f"p{i}" for i in range(5000)]
    doomed, peer = make(start=True), make(start=True)
    peer.enqueue_many("q", payloads)
    assert len(doomed.dequeue_many("q", 5000)) == 5000
    kill(redis_client, doomed)

    saved = redis_client.config_get("slowlog-*")
    try:
        # Log every command (those the scripts run too), so the requeue calls can
        # be counted and timed.
        redis_client.config_set("slowlog-log-slower-than", 0)
        redis_client.config_set("slowlog-max-len", 100_000)
        redis_client.slowlog_reset()
        assert peer.reap() == 1
        entries = redis_client.slowlog_get(100_000)
    finally:
        redis_client.config_set("slowlog-log-slower-than", saved["slowlog-log-slower-than"])
        redis_client.config_set("slowlog-max-len", saved["slowlog-max-len"])
        redis_client.slowlog_reset()

    calls = [e["duration"] for e in entries if runs_script(e["command"], "requeue_owned")]
    assert len(entries) < 100_000  # none dropped
    assert len(calls) >= math.ceil(5000 / peer.settings.requeue_chunk) > 1  # chunked
    assert max(calls) < 50_000, f"a requeue_owned call took {max(calls)} µs"
    assert queued(redis_client, prefix, "q") == payloads


WORKER_SCRIPT = textwrap.dedent(
    """
    import sys, time, worqr
    wq = worqr.Worqr(sys.argv[1], prefix=sys.argv[2], ttl=0.6, heartbeat=0.2)
    wq.start_worker()
    held = wq.dequeue_many("q", 2)
    print(" ".join(p.id for p in held), flush=True)
    time.sleep(60)  # holds its tasks until it is killed
    """
)


@pytest.mark.slow
def test_sigkilled_worker_is_failed_by_a_peer_within_ttl_plus_heartbeat(
    make: Factory, redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    """The timers, for real: a worker process is SIGKILLed while it holds two
    tasks; a peer's own heartbeats notice and return them within about
    ttl + heartbeat."""
    producer = make()
    producer.enqueue_many("q", ["a", "b", "c"])
    peer = make(start=True, ttl=0.6, heartbeat=0.2)
    child = subprocess.Popen(
        [sys.executable, "-c", WORKER_SCRIPT, redis_url, prefix], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert len(child.stdout.readline().split()) == 2
        assert producer.count_processes("q") == 2
        child.kill()
        child.wait(10)
        killed = time.monotonic()
        wait_until(lambda: producer.count_tasks("q") == 3, timeout=5, message="peer failover")
        took = time.monotonic() - killed
    finally:
        stop(child)
    assert took <= 0.6 + 2 * 0.2 + 0.5, took  # ttl + heartbeat (+ a reaper turn) + slack
    assert queued(redis_client, prefix, "q") == ["a", "b", "c"]
    assert producer.get_workers() == [peer.worker_id]


def test_a_recovery_cut_short_is_redone_and_reported_once(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    """The heartbeat finds the lease gone and starts recovering; the recovery is
    cut short halfway (Redis refuses the worker's scripts once, right after the
    loss is reported). The next heartbeat finishes the recovery, and the loss is
    reported (event and hooks) once, not once per try: a process that reported
    two losses looked like a crash loop in the Redis stall scenario's count."""
    user = f"cut-{prefix}"
    redis_client.acl_setuser(
        user, enabled=True, passwords=["+pw"], keys="*", channels="*", commands=["+@all"]
    )
    url = redis_url.replace("redis://", f"redis://{user}:pw@")
    worker = worqr.Worqr(url, settings=quiet(prefix))
    try:
        worker.start_worker()
        worker.start_work("q")
        worker.enqueue("q", "held")
        assert worker.dequeue("q") is not None
        events: list[str] = []
        hooked: list[str] = []
        worker.add_observer(lambda event, fields: events.append(event))

        def cut(old: str) -> None:
            hooked.append(old)
            if len(hooked) == 1:  # the recovery's next script is refused
                redis_client.acl_setuser(user, commands=["-evalsha", "-fcall"])

        worker.add_hooks(OnLeaseLost(cut))
        old = kill(redis_client, worker)
        with pytest.raises(redis.exceptions.NoPermissionError):
            worker.heartbeat()  # cut short right after reporting the loss
        assert worker.worker_id == old
        redis_client.acl_setuser(user, commands=["+evalsha", "+fcall"])
        assert worker.heartbeat() == "recovered"
        assert worker.worker_id != old
        assert hooked == [old] and events.count("lease_lost") == 1
        assert worker.get_workers() == [worker.worker_id]
        taken = worker.dequeue("q")  # the held task came back, and the queue was rejoined
        assert taken is not None and taken.task == "held"
    finally:
        worker.close()
        redis_client.acl_deluser(user)
