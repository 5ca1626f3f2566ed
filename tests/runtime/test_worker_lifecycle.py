"""Starting and stopping a worker: inside an existing loop (``async with``,
cancelling the task that runs it), signals, the grace period, persistent
handlers at shutdown, and sync handlers that ignore their cancellation."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from typing import Any

import pytest

import worqr
from tests.support.timing import FAST
from tests.support.waiting import async_wait_until, wait_until
from tests.support.workers import Runner, WorkerFactory
from worqr._keys import MeshKeys


def front(client: worqr.Worqr, queue: str, count: int) -> list[str | bytes]:
    """The next ``count`` tasks of ``queue``, front first (taken, then put back)."""
    client.start_worker()
    taken = [client.dequeue(queue) for _ in range(count)]
    for process in reversed(taken):
        assert process is not None and client.stop_process(process)
    return [p.task for p in taken if p is not None]


def test_async_with_runs_the_worker_in_the_callers_loop(
    new_worker: WorkerFactory, client: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    done: list[str] = []
    worker = new_worker()

    @worker.handler("q")
    async def handle(task: str) -> None:
        assert worqr.current_process().task == task
        done.append(task)

    async def main() -> None:
        async with worqr.AsyncWorqr(redis_url, prefix=prefix) as producer, worker:
            assert worker.worker_id in await producer.get_workers()
            await producer.enqueue_many("q", ["1", "2", "3"])
            await async_wait_until(lambda: len(done) == 3)

    asyncio.run(main())
    assert done == ["1", "2", "3"]
    assert client.get_workers() == []  # the block's end deregistered it


def test_cancelling_the_runner_task_stops_at_once_and_returns_tasks(
    new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    worker = new_worker(grace_period=30.0)

    @worker.handler("q")
    async def handle(task: str) -> None:
        await asyncio.sleep(60)

    async def main() -> float:
        task = asyncio.create_task(worker.run_async())
        await async_wait_until(lambda: worker.wait_started(0))
        client.enqueue_many("q", ["t1", "t2"])
        await async_wait_until(lambda: worker.in_flight == 2)
        began = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task  # the cancellation still propagates to its owner
        return time.monotonic() - began

    assert asyncio.run(main()) < 5  # no 30 s grace period
    assert client.get_workers() == []
    assert client.count_processes("q") == 0
    assert front(client, "q", 2) == ["t1", "t2"]


def draining(caplog: pytest.LogCaptureFixture) -> bool:
    return any(r.getMessage().startswith("waiting up to") for r in caplog.records)


def test_a_handler_that_ends_within_the_grace_period_is_finished(
    runner: Runner,
    new_worker: WorkerFactory,
    client: worqr.Worqr,
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    ran: list[str] = []
    worker = new_worker(grace_period=20.0)

    @worker.handler("q")
    def handle(task: str) -> None:
        ran.append(task)
        release.wait(20)

    caplog.set_level(logging.INFO, logger="worqr.worker")
    runner.start(worker)
    client.enqueue("q", "t")
    wait_until(lambda: ran == ["t"])
    stopping = threading.Thread(target=runner.stop, args=(worker,))
    stopping.start()
    wait_until(lambda: draining(caplog))
    release.set()  # the handler returns during the grace period
    stopping.join(10)
    assert not stopping.is_alive()
    assert ran == ["t"]
    assert client.count_tasks("q") == client.count_processes("q") == 0  # finished, not returned
    assert client.get_stats("q").get("finished") == 1


def test_persistent_handlers_do_not_hold_a_stop_for_the_grace_period(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    cleaned: list[str] = []
    worker = new_worker(grace_period=30.0)

    @worker.handler("conn", persistent=True)
    async def hold(task: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append(task)

    runner.start(worker)
    client.enqueue("conn", "session")
    wait_until(lambda: worker.in_flight == 1)
    began = time.monotonic()
    runner.stop(worker)
    assert time.monotonic() - began < 5
    assert cleaned == ["session"]
    assert client.count_tasks("conn") == 1  # back for a peer to take over
    assert client.get_failed("conn") == []


def test_a_second_stop_skips_the_grace_period(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    worker = new_worker(grace_period=30.0)

    @worker.handler("q")
    async def handle(task: str) -> None:
        await asyncio.sleep(60)

    runner.start(worker)
    client.enqueue_many("q", ["t1", "t2", "t3"])
    wait_until(lambda: worker.in_flight == 3)
    worker.stop()  # graceful: would wait 30 s
    began = time.monotonic()
    runner.stop(worker, now=True)
    assert time.monotonic() - began < 5
    assert client.get_workers() == []
    assert front(client, "q", 3) == ["t1", "t2", "t3"]


@pytest.mark.slow
def test_a_sync_handler_that_ignores_cancellation_cannot_hold_the_stop(
    runner: Runner,
    new_worker: WorkerFactory,
    client: worqr.Worqr,
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    returned = threading.Event()
    worker = new_worker(grace_period=0.1)

    @worker.handler("q")
    def stubborn(task: str) -> None:
        release.wait(30)  # never looks at current_process().cancelled
        returned.set()

    caplog.set_level(logging.WARNING, logger="worqr.worker")
    runner.start(worker)
    client.enqueue("q", "t")
    wait_until(lambda: worker.in_flight == 1)
    runner.stop(worker)  # grace, then one more second for the cancel, then give up
    assert client.get_workers() == []
    assert client.count_tasks("q") == 1 and client.count_processes("q") == 0
    assert any("ignore current_process().cancelled" in r.getMessage() for r in caplog.records)
    release.set()
    assert returned.wait(5)
    # Its late return acknowledges nothing: the task stays queued for the next worker.
    assert client.count_tasks("q") == 1 and client.get_stats("q").get("finished") is None


def test_stop_before_run_returns_at_once(new_worker: WorkerFactory) -> None:
    worker = new_worker()
    worker.handler("q")(print)
    worker.stop()
    began = time.monotonic()
    worker.run()
    assert time.monotonic() - began < 5


def test_sigterm_stops_gracefully_and_a_second_signal_at_once(
    new_worker: WorkerFactory, client: worqr.Worqr, caplog: pytest.LogCaptureFixture
) -> None:
    worker = new_worker(grace_period=30.0)
    began: list[float] = []

    @worker.handler("q")
    async def handle(task: str) -> None:
        await asyncio.sleep(60)

    def operator() -> None:
        assert worker.wait_started(10)
        # Never signal before the handlers are in place: SIGTERM would kill pytest.
        wait_until(lambda: signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)
        client.enqueue_many("q", ["t1", "t2"])
        wait_until(lambda: worker.in_flight == 2)
        began.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGTERM)  # graceful: would wait 30 s
        wait_until(lambda: draining(caplog))
        os.kill(os.getpid(), signal.SIGINT)  # the second signal: now

    caplog.set_level(logging.INFO, logger="worqr.worker")
    thread = threading.Thread(target=operator, daemon=True)
    thread.start()
    worker.run()  # returns normally (exit code 0 for a script)
    thread.join(5)
    assert time.monotonic() - began[0] < 5
    assert client.get_workers() == []
    assert front(client, "q", 2) == ["t1", "t2"]


def test_current_process_outside_a_handler_is_a_clear_error() -> None:
    with pytest.raises(worqr.WorqrError, match="outside a worqr handler"):
        worqr.current_process()


def test_settings_are_validated() -> None:
    client = worqr.Settings(**FAST)
    for bad in ({"concurrency": 0}, {"grace_period": -1}, {"batch": 0}, {"queue_limits": {"q": 0}}):
        with pytest.raises((ValueError, TypeError)):
            worqr.WorkerSettings(client=client, **bad)  # type: ignore[arg-type]


def test_leaving_covers_a_join_that_was_abandoned_halfway(
    redis_url: str, redis_client: Any, prefix: str
) -> None:
    # A worker's puller rejoins a queue (after a delete, or a lost membership)
    # inside a dequeue; a shutdown may cancel it between the join's scripts.
    keys = MeshKeys(prefix).queue("q")
    wq = worqr.Worqr(redis_url, settings=worqr.Settings(prefix=prefix, **FAST))
    worker_id = wq.start_worker()
    plan = wq._core.membership.start_work("q")
    request = next(plan)  # add_worker_queue, the subscription, then join_queue
    while getattr(request, "script", None) != "join_queue":
        request = plan.send(wq._execute(request, 1.0))
    wq._execute(request, 1.0)  # member and idle now
    plan.close()  # abandoned, as when the task driving it is cancelled
    assert redis_client.sismember(keys.idle, worker_id)
    wq.close()
    # Otherwise an enqueue could pick the departed id as the idle worker to wake.
    assert redis_client.smembers(keys.members) == set()
    assert redis_client.smembers(keys.idle) == set()


def test_a_worker_hears_wake_ups_before_it_becomes_a_member(
    redis_url: str, redis_client: Any, prefix: str
) -> None:
    """A member may be picked for a wake-up at once (a job queue's timer holder,
    chosen among members when none is idle): its wake channel is subscribed
    before the join makes it one, or that hint is lost until the next poll."""
    keys = MeshKeys(prefix).queue("q")
    with worqr.Worqr(redis_url, settings=worqr.Settings(prefix=prefix, **FAST)) as wq:
        worker_id = wq.start_worker()
        plan = wq._core.membership.start_work("q")
        request = next(plan)
        while getattr(request, "script", None) != "join_queue":
            request = plan.send(wq._execute(request, 1.0))
        assert not redis_client.sismember(keys.members, worker_id)
        wake = keys.wake(worker_id)
        wait_until(lambda: dict(redis_client.pubsub_numsub(wake)).get(wake.encode()) == 1)
        plan.close()


def test_registering_a_handler_is_checked(new_worker: WorkerFactory) -> None:
    worker = new_worker()

    @worker.handler("tasks")
    async def handle(task: str) -> None: ...

    worker.job("jobs", retries=1)(handle)
    for register in (worker.handler, worker.job):
        for queue in ("tasks", "jobs"):
            with pytest.raises(ValueError, match=f"queue '{queue}' already has a handler"):
                register(queue)
        with pytest.raises(TypeError, match="a handler must be callable"):
            register("other")(42)  # type: ignore[type-var]
        with pytest.raises(TypeError, match="isolated must be True or False"):
            register("other", isolated="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="retries"):
        worker.job("other", retries=-1)
    assert worker.queues == ["jobs", "tasks"]

    async def main() -> None:
        async with worker:
            late = worker.handler("late")
            with pytest.raises(worqr.WorqrError, match="register handlers before the worker runs"):
                late(handle)

    asyncio.run(main())
    assert worker.queues == ["jobs", "tasks"]
