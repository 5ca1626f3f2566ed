"""The outcome policy and the hooks: every started process ends in exactly one
outcome, hooks cannot break the worker, what counts as a failure, payloads in
logs, and handlers the worker must recognise as async."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

import worqr
from tests.support.recorders import HookCounter
from tests.support.waiting import wait_until
from tests.support.workers import Runner, WorkerFactory
from worqr._keys import MeshKeys


class BrokenHooks(worqr.Hooks):
    """Raises from every hook."""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_"):

            def broken(*args: object) -> None:
                raise RuntimeError(f"{name} broke")

            return broken
        return super().__getattribute__(name)


def test_every_started_process_ends_in_exactly_one_outcome(
    runner: Runner,
    new_worker: WorkerFactory,
    client: worqr.Worqr,
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = HookCounter()
    retried = threading.Event()
    worker = new_worker(hooks=[BrokenHooks(), recorder])

    @worker.handler("q")
    async def handle(task: str) -> None:
        if task == "fail":
            raise ValueError("no")
        if task == "retry" and not retried.is_set():
            retried.set()
            raise worqr.Retry()
        if task == "hold":
            await asyncio.Event().wait()

    caplog.set_level(logging.ERROR, logger="worqr")
    runner.start(worker)
    client.enqueue_many("q", ["ok", "fail", "retry", "hold"])
    wait_until(lambda: recorder.ended() == 4 and worker.in_flight == 1)
    assert client.cancel_tasks("q", "hold") == 1
    wait_until(lambda: recorder.ended() == 5)
    assert recorder.total("started") == 5  # "retry" ran twice
    assert recorder.total("finished") == 2
    assert (recorder.total("failed"), recorder.total("retried")) == (1, 1)
    assert (recorder.total("cancelled"), recorder.total("fenced")) == (1, 0)
    assert recorder.total("wakeup") >= 1 and recorder.dequeues
    assert any("hook BrokenHooks failed" in r.getMessage() for r in caplog.records)
    assert client.get_failed("q") == ["fail"]
    assert client.count_tasks("q") == client.count_processes("q") == 0


def test_payloads_are_logged_only_when_asked_and_then_truncated(
    runner: Runner,
    new_worker: WorkerFactory,
    client: worqr.Worqr,
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = new_worker(log_payloads=True)

    @worker.handler("q")
    def handle(task: str) -> None:
        raise RuntimeError("broken")

    caplog.set_level(logging.ERROR, logger="worqr")
    runner.start(worker)
    client.enqueue("q", "marker" + "x" * 100_000)
    wait_until(lambda: client.count_failed("q") == 1)
    wait_until(lambda: caplog.records)
    message = caplog.records[0].getMessage()
    assert "'markerxxx" in message
    assert len(message) < 500


def test_an_async_handler_cancelled_by_itself_is_a_failure(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    worker = new_worker()

    @worker.handler("q")
    async def handle(task: str) -> None:
        raise asyncio.CancelledError

    runner.start(worker)
    client.enqueue("q", "t")
    wait_until(lambda: client.get_failed("q") == ["t"])
    assert client.get_stats("q").get("finished") is None


def test_callable_objects_with_async_call_are_awaited(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    done: list[str] = []

    class Handler:
        async def __call__(self, task: str) -> None:
            await asyncio.sleep(0)
            done.append(task)

    worker = new_worker()
    worker.handler("q")(Handler())
    runner.start(worker)
    client.enqueue("q", "t")
    wait_until(lambda: done == ["t"])


def test_a_sync_handler_returning_a_coroutine_fails_loudly(
    runner: Runner,
    new_worker: WorkerFactory,
    client: worqr.Worqr,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []

    async def work(task: str) -> None:
        ran.append(task)

    worker = new_worker()
    worker.handler("q")(lambda task: work(task))  # looks sync: the coroutine is never run
    caplog.set_level(logging.ERROR, logger="worqr")
    runner.start(worker)
    client.enqueue("q", "t")
    wait_until(lambda: client.get_failed("q") == ["t"])  # not silently "finished"
    assert ran == []
    wait_until(lambda: caplog.records)
    assert "async def" in str(caplog.records[0].exc_info[1])  # type: ignore[index]


def test_current_process_in_sync_and_async_handlers(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    seen: list[tuple[str, str, str, str]] = []
    worker = new_worker()

    def record(task: str) -> None:
        context = worqr.current_process()
        assert not context.cancelled.is_set()
        seen.append((context.queue, context.task, context.worker_id, context.id))  # type: ignore[arg-type]

    worker.handler("sync")(record)

    @worker.handler("async")
    async def record_async(task: str) -> None:
        record(task)

    runner.start(worker)
    client.enqueue("sync", "s")
    client.enqueue("async", "a")
    wait_until(lambda: len(seen) == 2)
    assert sorted(s[:3] for s in seen) == [
        ("async", "a", worker.worker_id),
        ("sync", "s", worker.worker_id),
    ]
    assert all(s[3].startswith(f"{worker.worker_id}.") for s in seen)


def test_a_deleted_persistent_queue_is_configured_again(
    runner: Runner,
    new_worker: WorkerFactory,
    client: worqr.Worqr,
    redis_client: Any,
    prefix: str,
) -> None:
    config = MeshKeys(prefix).queue("conn").config
    held: list[str] = []
    worker = new_worker()

    @worker.handler("conn", persistent=True)
    async def hold(task: str) -> None:
        held.append(task)
        await asyncio.Event().wait()

    runner.start(worker)
    client.enqueue("conn", "one")
    wait_until(lambda: held == ["one"])
    assert redis_client.hget(config, "max_recoveries") == b"-1"
    client.delete_queue("conn")  # takes the queue's options with it
    wait_until(lambda: worker.in_flight == 0)
    client.enqueue("conn", "two")
    wait_until(lambda: held == ["one", "two"])
    assert redis_client.hget(config, "max_recoveries") == b"-1"
