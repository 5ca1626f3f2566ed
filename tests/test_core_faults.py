"""Faults the core must survive: a script cache flush, a server that stalls longer
than the client's socket timeout (resends must neither duplicate nor hide a task),
a short outage, a long one, and a cancel racing dequeues and a worker's death."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from core_helpers import Clients, CountingRedis, kill, queue_keys, race, sha
from helpers import wait_until

import worqr
from worqr.embedded import EmbeddedRedis

Q = "jobs"
STALL = 1.0  # seconds DEBUG SLEEP blocks the server
TIMEOUT = 0.25  # the client's socket timeout, well below STALL


@pytest.fixture
def clients(redis_url: str, prefix: str) -> Iterator[Clients]:
    made = Clients(redis_url, prefix)
    try:
        yield made
    finally:
        made.close_all()


def test_script_flush_mid_run_is_survived(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    producer = clients.make()
    worker, peer = clients.worker(Q), clients.worker(Q)
    producer.enqueue_many(Q, ["a", "b", "c"])
    first = worker.dequeue(Q)
    assert first is not None

    redis_client.script_flush()

    producer.enqueue(Q, "d")  # not resent blindly: NOSCRIPT means it never ran
    assert producer.count_tasks(Q) == 3
    second = worker.dequeue(Q)
    assert second is not None and second.task == "b"
    assert worker.finish_process(first)
    redis_client.script_flush()
    assert worker.stop_process(second)
    redis_client.script_flush()
    assert worker.heartbeat() in ("ok", "reaped")
    kill(redis_client, worker)
    redis_client.script_flush()
    assert peer.reap() == 1
    assert [p.task for p in peer.dequeue_many(Q, 10)] == ["b", "c", "d"]
    assert producer.get_stats(Q)["enqueued"] == 4


def stall(raw_url: str, seconds: float) -> threading.Thread:
    """Block the server with DEBUG SLEEP from another connection; returns once
    the server has stopped answering."""
    sleeper = redis.Redis.from_url(raw_url, socket_timeout=seconds + 10)

    def run() -> None:
        try:
            sleeper.execute_command("DEBUG", "SLEEP", seconds)
        finally:
            sleeper.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    probe = redis.Redis.from_url(raw_url, socket_timeout=0.05)

    def stalled() -> bool:
        try:
            probe.ping()
        except redis.TimeoutError:
            return True
        return False

    try:
        wait_until(stalled, timeout=2, interval=0.005, message="server stalls")
    finally:
        probe.close()
    return thread


def test_dequeue_resent_after_a_stall_returns_the_same_process(
    clients: Clients, redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    producer = clients.make()
    producer.enqueue_many(Q, ["a", "b", "c"])
    counting = CountingRedis.from_url(redis_url, socket_timeout=TIMEOUT)
    try:
        worker = clients.worker(Q, redis=counting, retry_deadline=10)
        counting.scripts_sent.clear()
        sleeper = stall(redis_url, STALL)
        process = worker.dequeue(Q)
        sleeper.join()
        assert counting.scripts_sent.count(sha("dequeue")) >= 2  # it was resent
    finally:
        counting.close()
    assert process is not None and process.task == "a"
    # No hidden task: exactly one process exists, and it is the one we got.
    assert redis_client.hkeys(queue_keys(prefix, Q).processes) == [process.id.encode()]
    assert producer.count_tasks(Q) == 2
    assert worker.finish_process(process)
    assert producer.count_processes(Q) == 0
    assert [p.task for p in worker.dequeue_many(Q, 5)] == ["b", "c"]


@pytest.mark.parametrize("batch", [1, 3])
def test_enqueue_during_a_stall_is_ambiguous_and_never_doubled(
    clients: Clients, redis_url: str, redis_client: redis.Redis, prefix: str, batch: int
) -> None:
    producer = clients.make(socket_timeout=TIMEOUT, retry_deadline=10)
    producer.enqueue(Q, "warm-up")  # registers the queue: only the script is left to send
    tasks = [f"task-{i}" for i in range(batch)]
    sleeper = stall(redis_url, STALL)
    started = time.monotonic()
    with pytest.raises(worqr.AmbiguousResultError) as raised:
        producer.enqueue_many(Q, tasks)
    assert time.monotonic() - started < STALL  # raised at the timeout, not resent
    sleeper.join()
    message = str(raised.value)
    assert "may or may not" in message
    if batch > 1:
        assert f"0 of {batch} tasks were enqueued" in message
    stored = Counter(redis_client.lrange(queue_keys(prefix, Q).tasks, 0, -1))
    # Applied once (the server ran it after the stall) or not at all; never twice.
    times = {stored[t.encode()] for t in tasks}
    assert len(times) == 1 and times <= {0, 1}
    # The queue's own counter agrees with its contents: the script ran atomically.
    assert stored[b"warm-up"] == 1
    assert producer.get_stats(Q)["enqueued"] == sum(stored.values())


def test_idempotent_calls_retry_through_a_short_outage(
    fresh_redis: EmbeddedRedis, prefix: str
) -> None:
    made = Clients(fresh_redis.url, prefix)
    try:
        producer = made.make(retry_deadline=10)
        producer.enqueue_many(Q, ["a", "b"])
        fresh_redis.stop()
        restarter = threading.Timer(0.5, fresh_redis.start)
        restarter.start()
        started = time.monotonic()
        assert producer.count_tasks(Q) == 2  # retried until the server was back
        waited = time.monotonic() - started
        restarter.join()
        assert 0.4 <= waited < 5, waited

        # A connect that fails was certainly never sent: even enqueue is resent.
        fresh_redis.stop()
        restarter = threading.Timer(0.5, fresh_redis.start)
        restarter.start()
        producer.enqueue(Q, "c")
        restarter.join()
        assert producer.count_tasks(Q) == 3
    finally:
        made.close_all()


@pytest.mark.parametrize("call", ["count_tasks", "enqueue"])
def test_redis_unavailable_after_the_retry_deadline(
    fresh_redis: EmbeddedRedis, prefix: str, call: str
) -> None:
    made = Clients(fresh_redis.url, prefix)
    try:
        client = made.make(retry_deadline=0.5)
        client.enqueue(Q, "a")
        fresh_redis.stop()
        operations: dict[str, Callable[[], Any]] = {
            "count_tasks": lambda: client.count_tasks(Q),
            "enqueue": lambda: client.enqueue(Q, "b"),
        }
        started = time.monotonic()
        with pytest.raises(worqr.RedisUnavailableError):
            operations[call]()
        waited = time.monotonic() - started
        assert 0.5 <= waited < 3, waited
        fresh_redis.start()
        assert client.count_tasks(Q) == 1  # nothing was applied
    finally:
        made.close_all()


def test_cancel_racing_dequeue_and_worker_death_never_brings_the_task_back(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    """Copies of "x" are queued among other tasks; a worker dequeues in a loop
    (holding every "x" it gets) while a producer cancels "x"; then the worker
    dies and a peer fails it. No "x" may survive anywhere, and every other task
    is accounted for."""
    others = [f"t{i}" for i in range(300)]
    tasks = [t for i, o in enumerate(others) for t in ((o, "x") if i % 10 == 0 else (o,))]
    producer = clients.make()
    producer.enqueue_many(Q, tasks)
    worker, peer = clients.worker(Q), clients.worker()
    finished: list[str | bytes] = []
    held_x: list[worqr.Process] = []

    def consume() -> None:
        while len(finished) < 150:
            for process in worker.dequeue_many(Q, 3):
                if process.task == "x":
                    held_x.append(process)
                elif worker.finish_process(process):
                    finished.append(process.task)
                else:
                    raise AssertionError(f"finishing {process.task!r} was refused")

    # Every copy, queued or held, is cancelled exactly once.
    assert race(consume, lambda: producer.cancel_tasks(Q, "x")) == [None, 30]
    kill(redis_client, worker)
    assert peer.reap() == 1

    keys = queue_keys(prefix, Q)
    assert b"x" not in redis_client.lrange(keys.tasks, 0, -1)
    assert b"x" not in redis_client.hvals(keys.processes)
    assert all(not worker.finish_process(p) for p in held_x)
    peer.start_work(Q)
    rest = [p.task for p in peer.dequeue_many(Q, 1000)]
    assert "x" not in rest
    assert sorted(finished + rest) == sorted(others)  # nothing else lost or doubled
    assert producer.get_stats(Q)["cancelled"] == 30


def test_cancel_racing_the_reaping_of_its_dead_worker_never_brings_the_task_back(
    clients: Clients, redis_client: redis.Redis, prefix: str
) -> None:
    """The worker holding "x" is dead; a peer reaps it while a producer cancels
    "x", both at once, many rounds. Whichever script runs first, "x" ends up
    nowhere (cancelled in process, or requeued and then removed from the queue)."""
    producer = clients.make()
    worker, peer = clients.worker(Q), clients.worker(Q)
    keys = queue_keys(prefix, Q)
    for round_ in range(15):
        producer.enqueue_many(Q, ["x", f"other-{round_}"])
        held = worker.dequeue(Q)
        assert held is not None and held.task == "x"
        kill(redis_client, worker)
        assert race(lambda: producer.cancel_tasks(Q, "x"), peer.reap) == [1, 1]
        assert b"x" not in redis_client.lrange(keys.tasks, 0, -1)
        assert b"x" not in redis_client.hvals(keys.processes)
        assert worker.heartbeat() == "recovered"  # the same client, a new id
        assert worker.finish_process(held) is False
        other = peer.dequeue(Q)
        assert other is not None and other.task == f"other-{round_}"
        assert peer.finish_process(other)
        assert peer.dequeue(Q) is None
    assert producer.get_stats(Q)["cancelled"] == 15
