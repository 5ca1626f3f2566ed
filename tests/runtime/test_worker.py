"""The worker runtime against a real Redis: outcomes, concurrency, cancellation,
lease loss, graceful stop, outages and persistent tasks."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

import worqr
from tests.support.recorders import HookCounter
from tests.support.timing import FAST
from tests.support.waiting import wait_until
from tests.support.workers import Runner, WorkerFactory
from worqr._runtime.running import RECANCEL_INTERVAL
from worqr.embedded import EmbeddedRedis


def test_sync_and_async_handlers_run_every_task_in_order(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    seen: list[str] = []
    worker = new_worker(concurrency=1)

    @worker.handler("sync")
    def on_sync(task: str) -> None:
        seen.append(f"s{task}")

    @worker.handler("async")
    async def on_async(task: str) -> None:
        await asyncio.sleep(0)
        seen.append(f"a{task}")

    runner.start(worker)
    client.enqueue_many("sync", [str(i) for i in range(20)])
    client.enqueue_many("async", [str(i) for i in range(20)])
    wait_until(lambda: len(seen) == 40, message=f"only {len(seen)} ran")
    assert [s for s in seen if s[0] == "s"] == [f"s{i}" for i in range(20)]
    assert [s for s in seen if s[0] == "a"] == [f"a{i}" for i in range(20)]
    wait_until(lambda: client.count_processes("sync") == 0 and client.count_processes("async") == 0)


def test_concurrency_cap_is_never_exceeded(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    lock = threading.Lock()
    state = {"now": 0, "max": 0, "done": 0}
    worker = new_worker(concurrency=3)

    @worker.handler("q")
    async def handle(task: str) -> None:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.005)
        with lock:
            state["now"] -= 1
            state["done"] += 1

    runner.start(worker)
    client.enqueue_many("q", [str(i) for i in range(60)])
    wait_until(lambda: state["done"] == 60)
    assert state["max"] == 3  # reached, never exceeded


def test_exception_dead_letters_and_logs_without_payload(
    runner: Runner,
    new_worker: WorkerFactory,
    client: worqr.Worqr,
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = new_worker()

    @worker.handler("q")
    def handle(task: str) -> None:
        raise RuntimeError("handler broke")

    caplog.set_level(logging.ERROR, logger="worqr.worker")
    runner.start(worker)
    client.enqueue("q", "secret-payload")
    wait_until(lambda: client.get_failed("q") == ["secret-payload"])
    assert client.count_tasks("q") == 0 and client.count_processes("q") == 0
    wait_until(lambda: any(r.exc_info for r in caplog.records))
    text = "\n".join(r.getMessage() + str(r.exc_info) for r in caplog.records)
    assert "handler broke" in text
    assert "secret-payload" not in text


def test_retry_returns_the_task_to_the_front(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    order: list[str] = []
    worker = new_worker(concurrency=1)

    @worker.handler("q")
    def handle(task: str) -> None:
        order.append(task)
        if task == "a" and order.count("a") == 1:
            raise worqr.Retry()

    client.enqueue_many("q", ["a", "b"])
    runner.start(worker)
    wait_until(lambda: len(order) == 3)
    assert order == ["a", "a", "b"]  # back at the front, not behind "b"


def test_cancel_reaches_running_async_sync_and_persistent_handlers(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    started: set[str] = set()
    stopped: set[str] = set()
    worker = new_worker()

    @worker.handler("async")
    async def run_async(task: str) -> None:
        started.add(task)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.add(task)
            raise

    @worker.handler("sync")
    def run_sync(task: str) -> None:
        started.add(task)
        assert worqr.current_process().cancelled.wait(60)
        stopped.add(task)

    @worker.handler("conn", persistent=True)
    async def hold(task: str) -> None:
        started.add(task)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.add(task)
            raise

    runner.start(worker)
    client.enqueue("async", "A")
    client.enqueue("sync", "S")
    client.enqueue("conn", "C")
    wait_until(lambda: started == {"A", "S", "C"})
    assert client.cancel_tasks("async", "A") == 1
    assert client.cancel_tasks("sync", "S") == 1
    assert client.cancel_tasks("conn", "C") == 1
    wait_until(lambda: stopped == {"A", "S", "C"})
    wait_until(lambda: worker.in_flight == 0)
    for queue in ("async", "sync", "conn"):
        assert client.count_tasks(queue) == 0
        assert client.count_processes(queue) == 0
        assert client.get_failed(queue) == []
        # The acknowledgement cleared the worker's own record of the process too.
        assert client.count_worker_processes(queue, worker.worker_id or "") == 0


def test_a_handler_that_swallows_a_cancel_is_cancelled_again_until_it_ends(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    started, swallowed, stopped = threading.Event(), threading.Event(), threading.Event()
    worker = new_worker()

    @worker.handler("q")
    async def stubborn(task: str) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            swallowed.set()  # as a library that loses a cancel does (redis-py's asyncio client)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.set()
            raise

    runner.start(worker)
    client.enqueue("q", "x")
    wait_until(started.is_set, message="the handler's start")
    assert client.cancel_tasks("q", "x") == 1
    wait_until(stopped.is_set, timeout=RECANCEL_INTERVAL + 10, message="the second cancel")
    assert swallowed.is_set()
    wait_until(lambda: worker.in_flight == 0)
    assert client.get_failed("q") == [] and client.count_processes("q") == 0


def test_lease_loss_cancels_handlers_and_the_worker_carries_on(
    runner: Runner,
    new_worker: WorkerFactory,
    client: worqr.Worqr,
    redis_client: Any,
    prefix: str,
) -> None:
    cancelled = threading.Event()
    ran: list[str] = []
    worker = new_worker()

    @worker.handler("q")
    async def handle(task: str) -> None:
        if task == "long":
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise
        ran.append(task)

    runner.start(worker)
    old = worker.worker_id
    assert old is not None
    client.enqueue("q", "long")
    wait_until(lambda: client.count_processes("q") == 1)
    redis_client.delete(f"{{{prefix}}}:alive:{old}")  # the lease expires
    wait_until(lambda: cancelled.is_set(), message="handler not cancelled on lease loss")
    wait_until(lambda: worker.worker_id not in (None, old), message="no re-registration")
    assert old not in client.get_workers()
    # Its own failover put the task back; the new identity takes it again.
    wait_until(lambda: client.count_processes("q") == 1 and client.count_tasks("q") == 0)
    client.enqueue("q", "after")
    wait_until(lambda: ran == ["after"])


def test_graceful_stop_returns_unfinished_tasks_and_deregisters(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    worker = new_worker(concurrency=2, grace_period=0.2)
    started = threading.Event()

    @worker.handler("q")
    async def handle(task: str) -> None:
        started.set()
        await asyncio.sleep(60)

    runner.start(worker)
    client.enqueue_many("q", ["t1", "t2", "t3"])
    wait_until(lambda: client.count_processes("q") == 2)
    runner.stop(worker)
    assert client.get_workers() == []
    assert client.count_processes("q") == 0
    # Both unfinished tasks are back at the front, oldest first, ahead of t3.
    client.start_worker()
    taken = [client.dequeue("q") for _ in range(3)]
    assert [p.task for p in taken if p is not None] == ["t1", "t2", "t3"]


@pytest.mark.fault
@pytest.mark.slow
def test_worker_survives_a_redis_restart(
    runner: Runner, new_worker: WorkerFactory, fresh_redis: EmbeddedRedis, prefix: str
) -> None:
    done: list[str] = []
    worker = new_worker(url=fresh_redis.url)

    @worker.handler("q")
    def handle(task: str) -> None:
        done.append(task)

    runner.start(worker)
    with worqr.Worqr(fresh_redis.url, settings=worqr.Settings(prefix=prefix, **FAST)) as wq:
        wq.enqueue("q", "before")
        wait_until(lambda: done == ["before"])
        fresh_redis.stop()
        fresh_redis.restart()
        wq.enqueue_many("q", [f"after{i}" for i in range(5)])
        wait_until(lambda: len(done) == 6, timeout=20, message=f"done={done}")
        wait_until(lambda: worker.worker_id in wq.get_workers(), timeout=10)


def test_persistent_task_moves_to_a_peer_when_its_owner_dies(
    runner: Runner,
    new_worker: WorkerFactory,
    client: worqr.Worqr,
    redis_client: Any,
    prefix: str,
) -> None:
    owners: list[str] = []

    def make() -> worqr.Worker:
        worker = new_worker()

        @worker.handler("conn", persistent=True)
        async def hold(task: str) -> None:
            owners.append(worqr.current_process().worker_id)
            await asyncio.Event().wait()

        return worker

    first = runner.start(make())
    client.enqueue("conn", "session-1")
    wait_until(lambda: len(owners) == 1)
    assert owners[0] == first.worker_id
    second = runner.start(make())
    # The owner dies: its lease is gone and its heartbeats stop.
    first.stop(now=True)
    redis_client.delete(f"{{{prefix}}}:alive:{owners[0]}")
    wait_until(lambda: len(owners) >= 2, timeout=10, message="no peer took the task over")
    assert owners[-1] == second.worker_id
    assert client.count_processes("conn") == 1
    assert client.get_failed("conn") == []


@pytest.mark.slow
def test_self_fencing_stops_dequeuing_when_heartbeats_fail(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    ran: list[str] = []
    recorder = HookCounter()
    worker = new_worker(hooks=[recorder])

    @worker.handler("q")
    def handle(task: str) -> None:
        ran.append(task)

    runner.start(worker)
    # The first take (joining finds the queue empty) has landed: a take sent
    # before the fake gap below could otherwise find the task.
    wait_until(lambda: any(entry[0] == "q" for entry in recorder.dequeues))
    inner = worker._client  # the running client, to fake a heartbeat gap
    assert inner is not None
    fresh: Callable[[], bool] = inner.lease_fresh
    inner.lease_fresh = lambda: False  # type: ignore[method-assign]
    client.enqueue("q", "t")
    # While fenced the task stays queued through several wake-ups and polls.
    with pytest.raises(AssertionError):
        wait_until(lambda: ran, timeout=1.0)
    assert client.count_tasks("q") == 1
    inner.lease_fresh = fresh  # type: ignore[method-assign]
    wait_until(lambda: ran == ["t"])


def test_a_worker_that_never_reached_redis_stops_when_asked(
    new_worker: WorkerFactory,
) -> None:
    from worqr.embedded import free_port

    worker = new_worker(url=f"redis://127.0.0.1:{free_port()}/0")

    @worker.handler("q")
    def handle(task: str) -> None: ...

    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    wait_until(lambda: worker._loop is not None, message="worker loop not running")
    worker.stop()
    thread.join(5)
    assert not thread.is_alive(), "a stop during startup was ignored"
