"""`worqr.AsyncWorqr` behaves like `worqr.Worqr`, against a real Redis.

The same scenario runs through both clients (a sync client seen through
awaitable methods, `Awaitably`), and the two must give the same *replies*,
method by method, and leave the same *Redis state* (every key under the
prefix, with worker ids and the prefix replaced by stable names). Then what
only an asyncio client can get wrong: failover and a zombie with the timers
running, coroutine listeners that await Redis from inside the listener task (a
wake-up that drives the work, also after a failover and after the worker
re-registered under a new id), and an `aclose()` that cancels and awaits its
background tasks, also when called from one of them, twice, or while a
callback is still cleaning up. (That the two clients have the same names,
signatures and docstrings is tests/core/test_facades.py's.)

Every warning is an error (pyproject.toml): a task destroyed while pending, an
unclosed connection or a never-awaited coroutine fails the test.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from typing import Any

import pytest
import redis
import redis.asyncio

import worqr
from tests.support.mesh import kill
from tests.support.recorders import OnLeaseLost
from tests.support.timing import quiet
from tests.support.waiting import async_wait_until, equals, wait_until
from worqr._core.processes import DEQUEUE_CHUNK
from worqr._keys import MeshKeys


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


# -- one scenario, both clients: the same replies ------------------------------------------


class Steps:
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


async def scenario(wq: Any, peer: Any, raw: redis.Redis, prefix: str) -> Steps:
    """Every method, through ``wq`` (and ``peer`` for failover); both are either
    AsyncWorqr clients or `Awaitably` wrappers of Worqr clients."""
    r = Steps()
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
    kill(raw, peer)
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
        return quiet(sync_prefix)

    with (
        worqr.Worqr(redis_url, settings=sync_settings()) as wq,
        worqr.Worqr(redis_url, settings=sync_settings()) as peer,
    ):
        expected = asyncio.run(scenario(Awaitably(wq), Awaitably(peer), redis_client, sync_prefix))

    async def run_async() -> Steps:
        settings = quiet(async_prefix)
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


# -- one scenario, both clients: the same Redis state -----------------------------------


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
    assert kill(raw, b) == workers[1]
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

    sync_settings = quiet(sync_prefix)
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
        settings = quiet(async_prefix)
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


# -- failover and zombies with timers ----------------------------------------------------------


def test_async_peer_fails_an_expired_worker_and_the_zombie_recovers(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    async def run() -> None:
        fast = worqr.Settings(prefix=prefix, ttl=1.0, heartbeat=0.2, poll_interval=0.5)
        slow = quiet(prefix)  # no timer fires: a frozen worker
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
                lambda: equals(peer.count_tasks("q"), 3), timeout=5, message="not failed over"
            )
            # Requeueing comes before forgetting the worker: wait for the last step too.
            await async_wait_until(
                lambda: equals(peer.get_workers(), [peer.worker_id]), timeout=5, message="forgot"
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
            worqr.AsyncWorqr(redis_url, settings=quiet(prefix)) as producer,
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

            assert kill(redis_client, worker) == old
            await async_wait_until(lambda: lost == [old], message="lease loss not noticed")
            new = await async_wait_until(lambda: worker.worker_id != old and worker.worker_id)
            # Rejoined its queue under the new id (the old id's processes went first),
            # and its listener subscribed the new id's wake-ups (the confirmation is
            # a drain hint, n=0): the re-registration has run to its end.
            await async_wait_until(lambda: equals(worker.get_working_queues(), ["q"]))
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


# -- listeners -------------------------------------------------------------------------------


def test_coroutine_and_plain_callbacks_both_run(redis_url: str, prefix: str) -> None:
    async def run() -> None:
        heard: list[tuple[str, str, Any]] = []

        async def coroutine_callback(event: str, message: Any) -> None:
            await asyncio.sleep(0)  # really awaited, not just created
            heard.append(("coroutine", event, message))

        def plain_callback(event: str, message: Any) -> None:
            heard.append(("plain", event, message))

        settings = quiet(prefix)
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

        settings = quiet(prefix)
        async with worqr.AsyncWorqr(redis_url, settings=settings) as worker:
            await worker.start_worker()
            await worker.on("q", broken)
            await worker.on("q", lambda event, message: heard.append(event))
            await worker.start_work("q")
            await worker.enqueue("q", "task")
            await async_wait_until(lambda: heard.count("work") >= 2)

    asyncio.run(run())


def test_a_coroutine_listener_does_the_work_it_is_woken_for(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    """A consumer written as a listener: each "work" event drains the queue from
    inside the listener task. New tasks, a stopped process and a dead peer's tasks
    all reach it without any polling (poll_interval is a minute)."""

    async def run() -> None:
        settings = quiet(prefix)
        done: list[str | bytes] = []
        events: list[tuple[str, Any]] = []
        drains: list[Any] = []  # each drain's event message, once that drain ended
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
                drains.append(message)

            # The peer holds two tasks before the consumer starts.
            await producer.enqueue_many("q", ["stopped", "orphaned"])
            await peer.start_worker()
            stopped, _orphaned = await peer.dequeue_many("q", 2)

            await consumer.start_worker()
            await consumer.on("q", on_event)
            await consumer.start_work("q")
            await async_wait_until(lambda: ("work", 0) in events, message="no initial drain")

            # Only once that drain ended is the next batch a wake-up (a drain still
            # running would take it on its own).
            def all_drains_ended() -> bool:
                return len(drains) == sum(event == "work" for event, _ in events)

            await async_wait_until(all_drains_ended, message="the initial drain never ended")
            assert done == []

            await producer.enqueue_many("q", ["a", "b", "c"])
            await async_wait_until(lambda: done == ["a", "b", "c"], message="not woken")
            assert ("work", 3) in events

            assert await peer.stop_process(stopped)  # back to the front: wakes the consumer
            await async_wait_until(lambda: done[-1:] == ["stopped"], message="stop: no wake-up")

            kill(redis_client, peer)
            assert await producer.reap() == 1  # requeues the dead peer's task: wakes it
            await async_wait_until(lambda: done[-1:] == ["orphaned"], message="reap: no wake-up")
            assert done == ["a", "b", "c", "stopped", "orphaned"]
            assert await producer.count_tasks("q") == 0
            assert await producer.count_processes("q") == 0

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
        assert {task.get_name() for task in mine} == {"worqr-lease", "worqr-listener"}
        assert "worqr-lease" in {thread.name for thread in threading.enumerate()}
        # Both loops are mid-run, not just started: the listener has delivered
        # fallback-poll hints, and heartbeats (every 0.05 s, from the lease
        # thread) have landed since.
        beat = wq._core.state.last_heartbeat
        await async_wait_until(lambda: len(hints) >= 3, message="no poll hints")
        await async_wait_until(lambda: wq._core.state.last_heartbeat > beat, message="no heartbeat")

        await wq.aclose()
        assert all(task.done() for task in mine)
        assert asyncio.all_tasks() == before
        assert "worqr-lease" not in {thread.name for thread in threading.enumerate()}
        async with worqr.AsyncWorqr(redis_url, settings=settings) as other:
            assert await other.get_workers() == []  # it left the mesh
            assert await other.count_tasks("q") == 1  # and returned its process

    asyncio.run(run())


def test_async_with_closes_on_error_too(redis_url: str, prefix: str) -> None:
    async def run() -> None:
        before = asyncio.all_tasks()
        settings = quiet(prefix)
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
        async with worqr.AsyncWorqr(redis_url, settings=quiet(prefix)) as admin:
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
    with worqr.Worqr(redis_url, settings=quiet(prefix)) as admin:
        admin.delete_queue("q")
        assert closed.wait(5)
        wait_until(lambda: set(threading.enumerate()) <= before, message="a thread outlived close")
        assert admin.get_workers() == []


def test_aclose_twice_and_without_a_worker(redis_url: str, prefix: str) -> None:
    async def run() -> None:
        before = asyncio.all_tasks()
        producer = worqr.AsyncWorqr(redis_url, settings=quiet(prefix))
        await producer.enqueue("q", "t")
        await producer.aclose()
        await producer.aclose()

        worker = worqr.AsyncWorqr(redis_url, settings=quiet(prefix))
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

        wq = worqr.AsyncWorqr(redis_url, settings=quiet(prefix))
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

        wq = worqr.AsyncWorqr(redis_url, settings=quiet(prefix))
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


# -- scripts flushed -----------------------------------------------------------------------


@pytest.mark.fault
def test_async_client_survives_scripts_flushed_under_load(
    redis_url: str, redis_client: redis.Redis, prefix: str
) -> None:
    async def run() -> None:
        settings = quiet(prefix)
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
