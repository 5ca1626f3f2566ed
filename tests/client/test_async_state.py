"""`worqr.AsyncWorqr` behaves like `worqr.Worqr`, down to the bytes in Redis.

test_mesh_async.py compares the two clients' *replies* method by method; this
file compares the *Redis state* they leave behind after the same operations
(every key under the prefix, with worker ids and the prefix replaced by stable
names), and covers what only an asyncio client can get wrong: listeners that
await Redis from inside the listener task (a wake-up that drives the work, also
after a failover and after the worker re-registered under a new id), and an
`aclose()` that cancels and awaits its background tasks, also when called from
one of them, twice, or while a callback is still cleaning up.

Every warning is an error here: a task destroyed while pending, an unclosed
connection or a never-awaited coroutine fails the test.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis

import worqr
from tests.support.recorders import OnLeaseLost
from tests.support.waiting import async_wait_until, wait_until
from worqr._core.processes import DEQUEUE_CHUNK
from worqr._keys import MeshKeys  # the one place key names are formatted

pytestmark = pytest.mark.filterwarnings("error")

LONG = {"ttl": 60.0, "heartbeat": 20.0, "poll_interval": 60.0}  # no timer fires in a test


# -- the same operations leave the same Redis state ------------------------------------------


class Awaitably:
    """A sync `Worqr` behind awaitable methods, so one scenario drives both clients."""

    def __init__(self, client: worqr.Worqr) -> None:
        self.client = client

    @property
    def worker_id(self) -> str | None:
        return self.client.worker_id

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self.client, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call


def dump(raw: redis.Redis, prefix: str, workers: list[str]) -> dict[str, Any]:
    """Every key of the mesh ``prefix``: its type, content and whether it expires,
    with the prefix and each worker id (also inside process ids and values)
    replaced by stable names. Worker info's start time is left out."""

    def norm(value: bytes) -> str:
        text = value.decode("utf-8", "backslashreplace").replace("{" + prefix, "{P")
        for number, worker in enumerate(workers, 1):
            text = text.replace(worker, f"W{number}")
        return text

    state: dict[str, Any] = {}
    for key in raw.scan_iter(match=f"{{{prefix}[:}}]*", count=1000):
        kind = raw.type(key).decode()
        content: Any
        if kind == "string":
            content = norm(raw.get(key) or b"")
        elif kind == "list":
            content = [norm(v) for v in raw.lrange(key, 0, -1)]
        elif kind == "set":
            content = sorted(norm(v) for v in raw.smembers(key))
        elif kind == "zset":
            content = [(norm(m), s) for m, s in raw.zrange(key, 0, -1, withscores=True)]
        elif kind == "hash":
            content = {norm(k): norm(v) for k, v in raw.hgetall(key).items() if k != b"started"}
        else:
            raise AssertionError(f"unexpected key type {kind}")
        state[norm(key)] = (kind, content, raw.pttl(key) > 0)
    return state


async def operations(
    producer: Any, a: Any, b: Any, raw: redis.Redis, prefix: str
) -> tuple[list[dict[str, Any]], list[Any]]:
    """The same sequence through either kind of client. Returns a Redis dump
    after each phase and every reply (with ids replaced by stable names)."""
    workers: list[str] = []
    dumps: list[dict[str, Any]] = []
    replies: list[Any] = []

    def checkpoint() -> None:
        dumps.append(dump(raw, prefix, workers))

    def note(value: Any) -> Any:
        replies.append(value.task if isinstance(value, worqr.Process) else value)
        return value

    async def refused(call: Awaitable[Any]) -> None:
        try:
            await call
        except worqr.WorqrError as error:
            replies.append(type(error).__name__)
        else:
            raise AssertionError("expected the call to be refused")

    # Producing, on two queues; q2 dead-letters a task on its first failover.
    await producer.enqueue("q", "t1")
    note(await producer.enqueue_many("q", ["t2", "t3", "t4", "t5", "t6", b"\x00\xff"]))
    await producer.enqueue("q2", "x")
    await producer.configure_queue("q2", max_recoveries=0)
    checkpoint()

    # Two workers take, finish, stop, dead-letter; the producer cancels one.
    workers.append(await a.start_worker())
    workers.append(await b.start_worker())
    await a.start_work("q")
    await a.on("q", lambda event, message: None)
    first = note(await a.dequeue("q"))
    second, third = [note(p) for p in await a.dequeue_many("q", 2)]
    mine = [note(p) for p in await b.dequeue_many("q", 3)]
    held_q2 = note(await b.dequeue("q2"))
    # A dequeue larger than one script call's chunk: several calls, one id prefix.
    await producer.enqueue_many("big", [f"b{i}" for i in range(DEQUEUE_CHUNK + 3)])
    big = await a.dequeue_many("big", 10**6)
    replies.append([p.task for p in big])
    replies.append(len({p.id.rsplit(".", 1)[0] for p in big}))  # one prefix
    note(await a.finish_process(first))
    note(await a.stop_process(second.id))
    note(await b.fail_process(mine[0]))
    note(await producer.cancel_tasks("q", "t6"))  # in b's hands
    note(await a.processes_exist("q", [first.id, third.id]))
    checkpoint()

    # b dies holding tasks on both queues; a's heartbeat takes the reaper turn.
    raw.delete(MeshKeys(prefix).alive(workers[1]))
    note(await a.workers_alive(workers))
    note(await a.heartbeat())
    note(await a.get_failed("q2"))
    checkpoint()

    # The zombie is fenced, learns it was failed, and comes back under a new id.
    note(await b.finish_process(held_q2))
    await refused(b.dequeue("q"))
    note(await b.heartbeat())
    workers.append(str(b.worker_id))
    taken = [note(p) for p in await b.dequeue_many("q", 3)]
    note(await b.finish_process(taken[0]))
    note(await a.fail_worker())
    await a.stop_work("q")
    note(await a.reap())
    note(await producer.requeue_failed("q2"))
    note(await producer.get_stats("q"))
    checkpoint()

    # Cleanup: a queue deleted, both workers leave (their processes go back).
    await producer.delete_queue("q2")
    note(await producer.get_queues())
    checkpoint()
    return dumps, replies


def test_both_clients_leave_the_same_redis_state(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    sync_prefix, async_prefix = f"{prefix}s", f"{prefix}a"

    sync_settings = worqr.Settings(prefix=sync_prefix, **LONG)
    with (
        worqr.Worqr(redis_url, settings=sync_settings) as producer,
        worqr.Worqr(redis_url, settings=sync_settings) as a,
        worqr.Worqr(redis_url, settings=sync_settings) as b,
    ):
        expected, expected_replies = asyncio.run(
            operations(Awaitably(producer), Awaitably(a), Awaitably(b), redis_client, sync_prefix)
        )
        sync_workers = [str(a.worker_id), str(b.worker_id)]
    expected.append(dump(redis_client, sync_prefix, sync_workers))

    async def run_async() -> tuple[list[dict[str, Any]], list[Any]]:
        settings = worqr.Settings(prefix=async_prefix, **LONG)
        async with (
            worqr.AsyncWorqr(redis_url, settings=settings) as producer,
            worqr.AsyncWorqr(redis_url, settings=settings) as a,
            worqr.AsyncWorqr(redis_url, settings=settings) as b,
        ):
            result = await operations(producer, a, b, redis_client, async_prefix)
            async_workers.extend([str(a.worker_id), str(b.worker_id)])
        return result

    async_workers: list[str] = []
    got, got_replies = asyncio.run(run_async())
    got.append(dump(redis_client, async_prefix, async_workers))

    assert got_replies == expected_replies
    for phase, (mine, theirs) in enumerate(zip(got, expected, strict=True)):
        assert mine == theirs, f"the clients' Redis states differ after phase {phase}"

    # The comparison is only worth something if the scenario did what it says.
    after_failover = expected[2]
    assert after_failover["{P:q2}:failed"][1] == ["x"]  # dead-lettered by the reap
    assert after_failover["{P}:reaper"][1] == "W1"
    assert "{P}:alive:W2" not in after_failover
    assert "{P:q}:worker:W2" not in after_failover
    assert expected_replies[expected_replies.index("reaped") - 1] == [True, False]
    assert "NotMemberError" in expected_replies
    assert "recovered" in expected_replies
    assert [f"b{i}" for i in range(DEQUEUE_CHUNK + 3)] in expected_replies
    closed = expected[-1]
    assert not any(":alive:" in key or key.endswith(":workers") for key in closed)


# -- wake-ups drive the work -------------------------------------------------------------------


def test_a_coroutine_listener_does_the_work_it_is_woken_for(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    """A consumer written as a listener: each "work" event drains the queue from
    inside the listener task. New tasks, a stopped process and a dead peer's tasks
    all reach it without any polling (poll_interval is a minute)."""

    async def run() -> None:
        settings = worqr.Settings(prefix=prefix, **LONG)
        done: list[str | bytes] = []
        events: list[tuple[str, Any]] = []
        async with (
            worqr.AsyncWorqr(redis_url, settings=settings) as consumer,
            worqr.AsyncWorqr(redis_url, settings=settings) as peer,
            worqr.AsyncWorqr(redis_url, settings=settings) as producer,
        ):

            async def on_event(event: str, message: Any) -> None:
                events.append((event, message))
                if event != "work":
                    return
                while (process := await consumer.dequeue("q")) is not None:
                    assert await consumer.finish_process(process)
                    done.append(process.task)

            # The peer holds two tasks before the consumer starts.
            await producer.enqueue_many("q", ["stopped", "orphaned"])
            await peer.start_worker()
            stopped, _orphaned = await peer.dequeue_many("q", 2)

            await consumer.start_worker()
            await consumer.on("q", on_event)
            await consumer.start_work("q")
            await async_wait_until(lambda: ("work", 0) in events, message="no initial drain")
            assert done == []

            await producer.enqueue_many("q", ["a", "b", "c"])
            await async_wait_until(lambda: done == ["a", "b", "c"], message="not woken")
            assert ("work", 3) in events

            assert await peer.stop_process(stopped)  # back to the front: wakes the consumer
            await async_wait_until(lambda: done[-1:] == ["stopped"], message="stop: no wake-up")

            redis_client.delete(MeshKeys(prefix).alive(str(peer.worker_id)))
            assert await producer.reap() == 1  # requeues the dead peer's task: wakes it
            await async_wait_until(lambda: done[-1:] == ["orphaned"], message="reap: no wake-up")
            assert done == ["a", "b", "c", "stopped", "orphaned"]
            assert await producer.count_tasks("q") == 0
            assert await producer.count_processes("q") == 0

    asyncio.run(run())


def test_after_losing_its_lease_the_heartbeat_task_reregisters_and_wakeups_follow(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    """The background heartbeat task (not a direct call) finds the alive key gone:
    the hook hears the old id, the held task goes back to the front, and the
    listener is woken on the new id's channel."""

    async def run() -> None:
        fast = worqr.Settings(prefix=prefix, ttl=1.0, heartbeat=0.05, poll_interval=60.0)
        lost: list[str] = []
        woken: list[tuple[str | None, int]] = []
        async with (
            worqr.AsyncWorqr(redis_url, settings=fast) as worker,
            worqr.AsyncWorqr(redis_url, settings=worqr.Settings(prefix=prefix, **LONG)) as producer,
        ):
            old = await worker.start_worker()
            worker.add_hooks(OnLeaseLost(lost.append))

            async def on_work(event: str, message: Any) -> None:
                if event == "work":
                    woken.append((worker.worker_id, message))

            await worker.on("q", on_work)
            await producer.enqueue_many("q", ["held", "next"])
            held = await worker.dequeue("q")
            assert held is not None and held.task == "held"

            redis_client.delete(MeshKeys(prefix).alive(old))
            await async_wait_until(lambda: lost == [old], message="lease loss not noticed")
            new = await async_wait_until(lambda: worker.worker_id != old and worker.worker_id)
            # Rejoined its queue under the new id (the old id's processes went first),
            # and its listener subscribed the new id's wake-ups (the confirmation is
            # a drain hint, n=0): the re-registration has run to its end.
            await async_wait_until(lambda: _equals(worker.get_working_queues(), ["q"]))
            await async_wait_until(lambda: (new, 0) in woken, message="not resubscribed")
            assert not await worker.finish_process(held)
            assert await producer.get_workers() == [new]

            # Back at the front, in order; and the new id is idle and subscribed.
            again = await worker.dequeue_many("q", 5)
            assert [p.task for p in again] == ["held", "next"]
            assert all(p.worker_id == new for p in again)
            await producer.enqueue("q", "after")
            await async_wait_until(lambda: (new, 1) in woken, message="no wake-up on the new id")

    asyncio.run(run())


async def _equals(value: Awaitable[Any], expected: Any) -> bool:
    return bool(await value == expected)


# -- closing -------------------------------------------------------------------------------


def _ours(before: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    return asyncio.all_tasks() - before - {asyncio.current_task()}  # type: ignore[operator]


def test_aclose_from_inside_its_own_listener_leaves_no_task(redis_url: str, prefix: str) -> None:
    """A callback that closes the client ("queue deleted: shut down") runs in the
    listener task, which aclose() cannot await; it must still end."""

    async def run() -> None:
        before = asyncio.all_tasks()
        settings = worqr.Settings(prefix=prefix, ttl=1.0, heartbeat=0.05, poll_interval=0.1)
        wq = worqr.AsyncWorqr(redis_url, settings=settings)
        closed = asyncio.Event()

        async def on_event(event: str, message: Any) -> None:
            if event == "delete":
                await wq.aclose()
                closed.set()

        await wq.start_worker()
        await wq.on("q", on_event)
        await wq.start_work("q")
        async with worqr.AsyncWorqr(
            redis_url, settings=worqr.Settings(prefix=prefix, **LONG)
        ) as admin:
            await admin.delete_queue("q")
            await asyncio.wait_for(closed.wait(), 5)
            await async_wait_until(lambda: not _ours(before), message="a loop outlived aclose")
            assert await admin.get_workers() == []

    asyncio.run(run())


def test_close_from_inside_its_own_listener_ends_every_thread(redis_url: str, prefix: str) -> None:
    """The sync reference for the test above: close() from the listener thread."""
    before = set(threading.enumerate())
    settings = worqr.Settings(prefix=prefix, ttl=1.0, heartbeat=0.05, poll_interval=0.1)
    wq = worqr.Worqr(redis_url, settings=settings)
    closed = threading.Event()

    def on_event(event: str, message: Any) -> None:
        if event == "delete":
            wq.close()
            closed.set()

    wq.start_worker()
    wq.on("q", on_event)
    wq.start_work("q")
    with worqr.Worqr(redis_url, settings=worqr.Settings(prefix=prefix, **LONG)) as admin:
        admin.delete_queue("q")
        assert closed.wait(5)
        wait_until(lambda: set(threading.enumerate()) <= before, message="a thread outlived close")
        assert admin.get_workers() == []


def test_aclose_twice_and_without_a_worker(redis_url: str, prefix: str) -> None:
    async def run() -> None:
        before = asyncio.all_tasks()
        producer = worqr.AsyncWorqr(redis_url, settings=worqr.Settings(prefix=prefix, **LONG))
        await producer.enqueue("q", "t")
        await producer.aclose()
        await producer.aclose()

        worker = worqr.AsyncWorqr(redis_url, settings=worqr.Settings(prefix=prefix, **LONG))
        await worker.start_worker()
        await worker.on("q", lambda event, message: None)
        await worker.aclose()
        await worker.aclose()
        assert worker.worker_id is None
        assert not _ours(before)

    asyncio.run(run())


def test_aclose_waits_for_a_callback_that_cleans_up_on_cancel(redis_url: str, prefix: str) -> None:
    """A coroutine callback cancelled by aclose() may await its own cleanup; aclose
    returns only after it finished, and the cancel reached it."""

    async def run() -> None:
        before = asyncio.all_tasks()
        started = asyncio.Event()
        cleaned: list[str] = []

        async def slow(event: str, message: Any) -> None:
            if event != "work" or message == 0:
                return
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                await asyncio.sleep(0.2)  # e.g. hand the task back
                cleaned.append("done")
                raise

        wq = worqr.AsyncWorqr(redis_url, settings=worqr.Settings(prefix=prefix, **LONG))
        await wq.start_worker()
        await wq.on("q", slow)
        await wq.start_work("q")
        await wq.enqueue("q", "t")
        await asyncio.wait_for(started.wait(), 5)
        await wq.aclose()
        assert cleaned == ["done"]
        assert not _ours(before)

    asyncio.run(run())


def test_cancelling_aclose_is_not_swallowed(redis_url: str, prefix: str) -> None:
    """aclose() awaits its cancelled loops; a cancel aimed at aclose itself must
    propagate (structured concurrency: CancelledError is never swallowed), so
    e.g. ``asyncio.timeout`` around it works."""

    async def run() -> None:
        started = asyncio.Event()

        async def slow(event: str, message: Any) -> None:
            if event != "work" or message == 0:
                return
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                await asyncio.sleep(0.5)  # a slow cleanup keeps aclose() waiting
                raise

        wq = worqr.AsyncWorqr(redis_url, settings=worqr.Settings(prefix=prefix, **LONG))
        await wq.start_worker()
        await wq.on("q", slow)
        await wq.start_work("q")
        await wq.enqueue("q", "t")
        await asyncio.wait_for(started.wait(), 5)

        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await wq.aclose()
        await wq.aclose()  # a second call finishes what the first could not

    asyncio.run(run())
