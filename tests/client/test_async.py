"""`worqr.AsyncWorqr` against a real Redis: the same methods as `worqr.Worqr`
with the same results (one scenario run through both clients), failover and a
zombie, coroutine listeners, and an `aclose()` that leaves no task behind.

Every warning is an error here: a task destroyed while pending, an unclosed
connection or a never-awaited coroutine fails the test.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import Any

import pytest
import redis
import redis.asyncio

import worqr
from tests.support.recorders import OnLeaseLost
from tests.support.waiting import async_wait_until
from worqr._keys import MeshKeys

pytestmark = pytest.mark.filterwarnings("error")

LONG = {"ttl": 60.0, "heartbeat": 20.0, "poll_interval": 60.0}
SYNC_ONLY = {"close"}
ASYNC_ONLY = {"aclose"}


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_the_clients_have_the_same_methods_and_signatures() -> None:
    assert public(worqr.Worqr) - SYNC_ONLY == public(worqr.AsyncWorqr) - ASYNC_ONLY
    for name in public(worqr.Worqr) - SYNC_ONLY:
        sync, other = getattr(worqr.Worqr, name), getattr(worqr.AsyncWorqr, name)
        if isinstance(sync, property):
            assert isinstance(other, property), name
            continue
        assert (
            inspect.signature(sync).parameters.keys() == inspect.signature(other).parameters.keys()
        )
        # What waits on Redis is a coroutine in the async client; local helpers are not.
        local = name in {"lease_fresh", "add_observer", "add_hooks"}
        assert inspect.iscoroutinefunction(other) is not local, name
    sync_init = inspect.signature(worqr.Worqr.__init__).parameters.values()
    async_init = inspect.signature(worqr.AsyncWorqr.__init__).parameters.values()
    assert [(p.name, p.kind, p.default) for p in sync_init] == [
        (p.name, p.kind, p.default) for p in async_init
    ]
    assert inspect.iscoroutinefunction(worqr.AsyncWorqr.aclose)
    assert inspect.iscoroutinefunction(worqr.AsyncWorqr.__aenter__)


# -- one scenario, both clients -----------------------------------------------------------


class Awaitably:
    """A sync client seen through awaitable methods, so one scenario drives both."""

    def __init__(self, client: worqr.Worqr) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.client, name)
        if not callable(attribute):
            return attribute

        async def call(*args: Any, **kwargs: Any) -> Any:
            return attribute(*args, **kwargs)

        return call


class Recorder:
    """Records each step's result with worker and process ids replaced by
    stable names (W1, P1, ...), so two runs can be compared."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, Any]] = []
        self.names: dict[str, str] = {}

    def name(self, value: str, kind: str) -> str:
        if value not in self.names:
            count = sum(1 for n in self.names.values() if n.startswith(kind))
            self.names[value] = f"{kind}{count + 1}"
        return self.names[value]

    def normal(self, value: Any) -> Any:
        if isinstance(value, worqr.Process):
            return ("Process", self.name(value.id, "P"), value.queue, value.task, value.data)
        if isinstance(value, list):
            if value and all(isinstance(v, str) and v in self.names for v in value):
                return sorted(self.names[v] for v in value)  # ids sort by their random part
            return [self.normal(v) for v in value]
        if isinstance(value, dict):
            return {k: self.normal(v) for k, v in sorted(value.items()) if k != "started"}
        if isinstance(value, str) and value in self.names:
            return self.names[value]
        return value

    async def step(self, label: str, call: Awaitable[Any]) -> Any:
        try:
            value = await call
        except Exception as error:
            self.steps.append((label, ("raised", type(error).__name__)))
            return None
        self.steps.append((label, self.normal(value)))
        return value


async def scenario(wq: Any, peer: Any, raw: redis.Redis, prefix: str) -> Recorder:
    """Every method, through ``wq`` (and ``peer`` for failover); both are either
    AsyncWorqr clients or `Awaitably` wrappers of Worqr clients."""
    r = Recorder()
    mesh = MeshKeys(prefix)
    r.steps.append(("worker_id before", wq.worker_id))
    await r.step("dequeue before start", wq.dequeue("q"))
    await r.step("fail_worker before start", wq.fail_worker())
    await r.step("enqueue", wq.enqueue("q", "a"))
    await r.step("enqueue_many", wq.enqueue_many("q", ["b", "c", "d", b"\xff"]))
    await r.step("enqueue bad", wq.enqueue("q", 3))
    await r.step("enqueue bad name", wq.enqueue("{q}", "x"))
    await r.step("count_tasks", wq.count_tasks("q"))
    await r.step("get_queues", wq.get_queues())
    me = await wq.start_worker()
    r.name(me, "W")
    r.steps.append(("worker_id", r.normal(wq.worker_id)))
    await r.step("start_worker again", wq.start_worker())
    await r.step("get_workers", wq.get_workers())
    await r.step("start_work", wq.start_work("q"))
    await r.step("get_working_queues", wq.get_working_queues())
    await r.step("get_working_queues of", wq.get_working_queues(me))
    a = await r.step("dequeue", wq.dequeue("q"))
    b, c = await r.step("dequeue_many", wq.dequeue_many("q", 2))
    await r.step("processes_exist", wq.processes_exist("q", [a.id, b.id, "nope"]))
    await r.step("count_processes", wq.count_processes("q"))
    await r.step("finish", wq.finish_process(a))
    await r.step("finish again", wq.finish_process(a))
    await r.step("stop", wq.stop_process(b.id))
    await r.step("fail_process", wq.fail_process(c))
    await r.step("get_failed", wq.get_failed("q"))
    await r.step("count_failed", wq.count_failed("q"))
    await r.step("cancel_tasks", wq.cancel_tasks("q", "d"))
    await r.step("configure_queue", wq.configure_queue("q", max_recoveries=-1))
    await r.step("configure_queue bad", wq.configure_queue("q", max_recoveries=-5))
    await r.step("dequeue_many rest", wq.dequeue_many("q", 5))
    await r.step("fail_worker", wq.fail_worker())
    await r.step("count_worker_processes", wq.count_worker_processes("q", me))

    # Failover: the peer takes a task and dies holding it.
    r.name(await peer.start_worker(), "W")
    held = await r.step("peer dequeue", peer.dequeue("q"))
    raw.delete(mesh.alive(peer.worker_id))
    await r.step("workers_alive", wq.workers_alive([me, peer.worker_id]))
    await r.step("reap", wq.reap())
    await r.step("heartbeat", wq.heartbeat())
    await r.step("heartbeat again", wq.heartbeat())
    await r.step("queue after failover", wq.dequeue_many("q", 5))
    await r.step("fail_worker again", wq.fail_worker())
    await r.step("zombie finish", peer.finish_process(held))
    await r.step("zombie dequeue", peer.dequeue("q"))
    await r.step("zombie heartbeat", peer.heartbeat())
    r.name(peer.worker_id, "W")
    r.steps.append(("zombie new id", r.normal(peer.worker_id)))
    await r.step("get_workers after", wq.get_workers())

    await r.step("get_worker_info", wq.get_worker_info(me))
    await r.step("requeue_failed", wq.requeue_failed("q"))
    await r.step("purge_failed", wq.purge_failed("q"))
    await r.step("stop_work", wq.stop_work("q"))
    await r.step("get_working_queues after", wq.get_working_queues())
    await r.step("count_tasks after", wq.count_tasks("q"))
    await r.step("get_stats", wq.get_stats("q"))
    await r.step("delete_queue", wq.delete_queue("q"))
    await r.step("get_queues after", wq.get_queues())
    return r


def test_both_clients_give_the_same_results(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    sync_prefix, async_prefix = f"{prefix}s", f"{prefix}a"

    def sync_settings() -> worqr.Settings:
        return worqr.Settings(prefix=sync_prefix, **LONG)

    with (
        worqr.Worqr(redis_url, settings=sync_settings()) as wq,
        worqr.Worqr(redis_url, settings=sync_settings()) as peer,
    ):
        expected = asyncio.run(scenario(Awaitably(wq), Awaitably(peer), redis_client, sync_prefix))

    async def run_async() -> Recorder:
        settings = worqr.Settings(prefix=async_prefix, **LONG)
        async with (
            worqr.AsyncWorqr(redis_url, settings=settings) as wq,
            worqr.AsyncWorqr(redis_url, settings=settings) as peer,
        ):
            return await scenario(wq, peer, redis_client, async_prefix)

    got = asyncio.run(run_async())
    assert got.steps == expected.steps
    results = dict(expected.steps)
    # Spot checks that the scenario did what it says (the sync semantics are
    # tested in depth elsewhere).
    assert results["dequeue before start"] == ("raised", "NotStartedError")
    assert results["enqueue bad"] == ("raised", "TypeError")
    assert results["enqueue bad name"] == ("raised", "ValueError")
    assert results["finish again"] is False
    assert results["reap"] == 1
    assert results["zombie finish"] is False
    assert results["zombie dequeue"] == ("raised", "NotMemberError")
    assert results["zombie heartbeat"] == "recovered"
    assert results["zombie new id"] == "W3"
    assert [p[3] for p in results["queue after failover"]] == ["b", b"\xff"]


# -- failover and zombies with timers ----------------------------------------------------------


def test_async_peer_fails_an_expired_worker_and_the_zombie_recovers(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    async def run() -> None:
        fast = worqr.Settings(prefix=prefix, ttl=1.0, heartbeat=0.2, poll_interval=0.5)
        slow = worqr.Settings(prefix=prefix, **LONG)  # no timer fires: a frozen worker
        lost: list[str] = []
        async with (
            worqr.AsyncWorqr(redis_url, settings=slow) as zombie,
            worqr.AsyncWorqr(redis_url, settings=fast) as peer,
        ):
            old = await zombie.start_worker()
            zombie.add_hooks(OnLeaseLost(lost.append))
            await peer.start_worker()
            await peer.enqueue_many("q", ["a", "b", "c"])
            held = await zombie.dequeue_many("q", 2)
            redis_client.pexpire(MeshKeys(prefix).alive(old), 200)  # it stops heartbeating

            # The peer's own heartbeat loop reaps it: tasks back at the front, in order.
            await async_wait_until(
                lambda: _equals(peer.count_tasks("q"), 3), timeout=5, message="not failed over"
            )
            # Requeueing comes before forgetting the worker: wait for the last step too.
            await async_wait_until(
                lambda: _equals(peer.get_workers(), [peer.worker_id]), timeout=5, message="forgot"
            )
            assert [await zombie.finish_process(p) for p in held] == [False, False]
            with pytest.raises(worqr.LeaseLostError):
                await zombie.dequeue("q")

            assert await zombie.heartbeat() == "recovered"
            assert lost == [old]
            assert zombie.worker_id not in (None, old)
            again = await zombie.dequeue_many("q", 3)
            assert [p.task for p in again] == ["a", "b", "c"]
            assert all([await zombie.finish_process(p) for p in again])

    asyncio.run(run())


async def _equals(value: Awaitable[Any], expected: Any) -> bool:
    return bool(await value == expected)


# -- listeners -------------------------------------------------------------------------------


def test_coroutine_and_plain_callbacks_both_run(redis_url: str, prefix: str) -> None:
    async def run() -> None:
        heard: list[tuple[str, str, Any]] = []

        async def coroutine_callback(event: str, message: Any) -> None:
            await asyncio.sleep(0)  # really awaited, not just created
            heard.append(("coroutine", event, message))

        def plain_callback(event: str, message: Any) -> None:
            heard.append(("plain", event, message))

        settings = worqr.Settings(prefix=prefix, **LONG)
        async with (
            worqr.AsyncWorqr(redis_url, settings=settings) as worker,
            worqr.AsyncWorqr(redis_url, settings=settings) as producer,
        ):
            await worker.start_worker()
            await worker.on("q", coroutine_callback)
            await worker.on("q", plain_callback)
            await worker.start_work("q")
            await async_wait_until(lambda: ("coroutine", "work", 0) in heard)
            await producer.enqueue("q", "task")
            await async_wait_until(lambda: ("coroutine", "work", 1) in heard)
            assert ("plain", "work", 1) in heard
            process = await worker.dequeue("q")
            assert process is not None
            await producer.cancel_tasks("q", "task")
            await async_wait_until(lambda: ("coroutine", "cancel", [process.id]) in heard)
            await producer.delete_queue("q")
            await async_wait_until(lambda: ("coroutine", "delete", None) in heard)

    asyncio.run(run())


def test_a_failing_coroutine_callback_does_not_stop_the_listener(
    redis_url: str, prefix: str
) -> None:
    async def run() -> None:
        heard: list[str] = []

        async def broken(event: str, message: Any) -> None:
            raise RuntimeError("listener bug")

        settings = worqr.Settings(prefix=prefix, **LONG)
        async with worqr.AsyncWorqr(redis_url, settings=settings) as worker:
            await worker.start_worker()
            await worker.on("q", broken)
            await worker.on("q", lambda event, message: heard.append(event))
            await worker.start_work("q")
            await worker.enqueue("q", "task")
            await async_wait_until(lambda: heard.count("work") >= 2)

    asyncio.run(run())


# -- closing ---------------------------------------------------------------------------------


def test_aclose_cancels_and_awaits_its_background_tasks(redis_url: str, prefix: str) -> None:
    async def run() -> None:
        before = asyncio.all_tasks()
        settings = worqr.Settings(prefix=prefix, ttl=1.0, heartbeat=0.05, poll_interval=0.1)
        wq = worqr.AsyncWorqr(redis_url, settings=settings)
        await wq.start_worker()
        hints: list[Any] = []
        await wq.on("q", lambda event, message: hints.append(message) if message == 0 else None)
        await wq.start_work("q")
        await wq.enqueue("q", "task")
        assert await wq.dequeue("q") is not None
        mine = asyncio.all_tasks() - before
        assert {task.get_name() for task in mine} == {"worqr-heartbeat", "worqr-listener"}
        # Both loops are mid-run, not just started: the listener has delivered
        # fallback-poll hints, and heartbeats (every 0.05 s) have landed since.
        beat = wq._core.last_heartbeat
        await async_wait_until(lambda: len(hints) >= 3, message="no poll hints")
        await async_wait_until(lambda: wq._core.last_heartbeat > beat, message="no heartbeat")

        await wq.aclose()
        assert all(task.done() for task in mine)
        assert asyncio.all_tasks() == before
        async with worqr.AsyncWorqr(redis_url, settings=settings) as other:
            assert await other.get_workers() == []  # it left the mesh
            assert await other.count_tasks("q") == 1  # and returned its process

    asyncio.run(run())


def test_async_with_closes_on_error_too(redis_url: str, prefix: str) -> None:
    async def run() -> None:
        before = asyncio.all_tasks()
        settings = worqr.Settings(prefix=prefix, **LONG)
        with pytest.raises(RuntimeError, match="boom"):
            async with worqr.AsyncWorqr(redis_url, settings=settings) as wq:
                await wq.start_worker()
                await wq.on("q", lambda event, message: None)
                raise RuntimeError("boom")
        assert asyncio.all_tasks() == before
        async with worqr.AsyncWorqr(redis_url, settings=settings) as other:
            assert await other.get_workers() == []

    asyncio.run(run())


def test_many_clients_open_and_close_cleanly(redis_url: str, prefix: str) -> None:
    async def one(index: int, settings: worqr.Settings) -> str:
        async with worqr.AsyncWorqr(redis_url, settings=settings) as wq:
            worker = await wq.start_worker()
            await wq.on("q", lambda event, message: None)
            await wq.enqueue("q", f"t{index}")
            await wq.dequeue("q")
            return worker

    async def run() -> None:
        settings = worqr.Settings(prefix=prefix, ttl=1.0, heartbeat=0.1, poll_interval=0.2)
        before = asyncio.all_tasks()
        workers = await asyncio.gather(*(one(i, settings) for i in range(8)))
        assert len(set(workers)) == 8
        assert asyncio.all_tasks() == before
        async with worqr.AsyncWorqr(redis_url, settings=settings) as check:
            assert await check.get_workers() == []
            assert await check.count_processes("q") == 0
            assert await check.count_tasks("q") == 8

    asyncio.run(run())


def test_async_client_survives_scripts_flushed_under_load(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    async def run() -> None:
        settings = worqr.Settings(prefix=prefix, **LONG)
        payloads = [f"t{i}" for i in range(200)]
        finished: list[str | bytes] = []
        flusher = redis.asyncio.Redis.from_url(redis_url)

        stop = asyncio.Event()

        async def flush() -> None:  # every millisecond, also between a reload and its retry
            # Stopped by an event, not a cancel: on Python 3.11 redis-py can swallow
            # a cancel that lands as a command is written (cpython gh-86296).
            while not stop.is_set():
                await flusher.script_flush()
                await asyncio.sleep(0.001)

        async with worqr.AsyncWorqr(redis_url, settings=settings) as wq:
            await wq.start_worker()
            flushing = asyncio.create_task(flush())
            try:
                for start in range(0, len(payloads), 10):
                    await wq.enqueue_many("q", payloads[start : start + 10])
                    for process in await wq.dequeue_many("q", 10):
                        assert await wq.finish_process(process)
                        finished.append(process.task)
            finally:
                stop.set()
                await flushing
                await flusher.aclose()
        assert finished == payloads

    asyncio.run(run())
