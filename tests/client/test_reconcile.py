"""Reconciling: processes Redis says a worker holds but the worker no longer runs
(a finish lost in a failover, a dequeue whose reply never came) go back to the
front of their queue; processes the client holds, or is receiving, stay."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis

import worqr
from tests.support.clients import Factory
from tests.support.timing import quiet
from tests.support.waiting import wait_until
from worqr._keys import MeshKeys


def _lose_finish(raw: redis.Redis, prefix: str, worker: str, pid: str, task: str) -> None:
    """Put Redis back in the state before the finish of ``pid``, as a replica
    promoted before the finish reached it would be."""
    keys = MeshKeys(prefix).queue("q")
    raw.hset(keys.processes, pid, task)
    raw.zadd(keys.owned(worker), {pid: 0})


def test_a_lost_finish_is_returned_to_the_front(
    worker: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    worker.enqueue_many("q", ["a", "b", "c"])
    first, second = worker.dequeue_many("q", 2)
    assert worker.finish_process(first)
    _lose_finish(redis_client, prefix, worker.worker_id or "", first.id, "a")
    assert worker.count_processes("q") == 2
    assert worker.reconcile() == 1
    assert worker.count_processes("q") == 1  # the held one stays
    again = worker.dequeue("q")
    assert again is not None and again.task == "a"  # at the front, ahead of "c"
    assert worker.finish_process(second) and worker.finish_process(again)
    assert worker.reconcile() == 0


def test_a_returned_task_wakes_an_idle_peer_without_an_outage(
    worker: worqr.Worqr, make: Factory, redis_client: redis.Redis, prefix: str
) -> None:
    """Regression: reconcile once called the stop script without its publish
    argument. With an idle peer on the queue the script failed after it had
    requeued the task: the peer left the idle set without a wake-up, and the
    heartbeat that ran the reconcile failed as a phantom Redis outage."""
    worker.enqueue("q", "a")
    process = worker.dequeue("q")
    assert process is not None and worker.finish_process(process)
    _lose_finish(redis_client, prefix, worker.worker_id or "", process.id, "a")
    keys = MeshKeys(prefix).queue("q")
    with make() as peer:
        woken: list[object] = []
        peer.on("q", lambda event, message: woken.append(message) if event == "work" else None)
        peer.start_worker()
        assert peer.dequeue("q") is None  # drained: the peer waits in the idle set
        wait_until(lambda: woken, message="the peer's subscribe confirmation")
        woken.clear()
        assert redis_client.smembers(keys.idle) == {peer.worker_id.encode()}
        down: list[str] = []
        worker.add_observer(lambda event, fields: down.append(event) if "down" in event else None)
        worker._core.state.last_heartbeat = (
            time.monotonic() - 3 * worker.settings.heartbeat
        )  # a missed beat
        assert worker.heartbeat() in ("ok", "reaped")  # reconciles, and does not fail
        assert down == []
        assert worker.count_tasks("q") == 1
        wait_until(lambda: woken == [1], message="the idle peer's wake-up")
        taken = peer.dequeue("q")
        assert taken is not None and taken.task == "a"
        assert peer.finish_process(taken)


def test_heartbeat_after_a_gap_reconciles(
    worker: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    worker.enqueue("q", "a")
    process = worker.dequeue("q")
    assert process is not None and worker.finish_process(process)
    _lose_finish(redis_client, prefix, worker.worker_id or "", process.id, "a")
    assert worker.heartbeat() in ("ok", "reaped")  # no gap yet: nothing checked
    assert worker.count_processes("q") == 1
    worker._core.state.last_heartbeat = (
        time.monotonic() - 3 * worker.settings.heartbeat
    )  # a missed beat
    worker.heartbeat()
    assert (worker.count_processes("q"), worker.count_tasks("q")) == (0, 1)


def test_a_dequeue_in_flight_is_left_alone(
    worker: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    """Redis applied a dequeue whose reply the client has not read yet:
    reconciling meanwhile must not take those processes away."""
    worker.enqueue_many("q", ["a", "b"])
    worker.start_work("q")  # so the plan's first request is the dequeue script
    plan = worker._core.processes.dequeue("q", 2)
    request = next(plan)
    reply = worker._execute(request, 0)  # applied in Redis; the plan has not seen it
    assert worker.count_processes("q") == 2
    assert worker.reconcile() == 0
    with pytest.raises(StopIteration) as done:
        plan.send(reply)
    taken = done.value.value
    assert [p.task for p in taken] == ["a", "b"]
    assert all(worker.finish_process(p) for p in taken)


def test_an_abandoned_dequeue_is_returned(worker: worqr.Worqr) -> None:
    """A dequeue applied in Redis whose reply never arrived (the plan ended with
    an error): its processes are strays, returned in order."""
    worker.enqueue_many("q", ["a", "b", "c"])
    worker.start_work("q")
    plan = worker._core.processes.dequeue("q", 2)
    worker._execute(next(plan), 0)
    with pytest.raises(worqr.RedisUnavailableError):
        plan.throw(worqr.RedisUnavailableError("reply lost"))
    assert worker.reconcile() == 2
    assert [p.task for p in worker.dequeue_many("q", 3)] == ["a", "b", "c"]


def test_async_reconcile(redis_url: str, prefix: str, redis_client: redis.Redis) -> None:
    async def main() -> None:
        settings = quiet(prefix)
        async with worqr.AsyncWorqr(redis_url, settings=settings) as client:
            await client.start_worker()
            await client.enqueue("q", "a")
            process = await client.dequeue("q")
            assert process is not None and await client.finish_process(process)
            _lose_finish(redis_client, prefix, client.worker_id or "", process.id, "a")
            assert await client.reconcile() == 1
            assert await client.count_tasks("q") == 1

    asyncio.run(main())
