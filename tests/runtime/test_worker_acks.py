"""The worker's batched finishes: a handler that returns leaves its finish to its
queue's next call, which also dequeues (complete.lua). Finishes still reach the
hooks one by one, land without a further dequeue, and stay fenced: a worker
failed while its finishes wait gets them refused, and its tasks run elsewhere."""

from __future__ import annotations

import asyncio
import threading

import pytest

import worqr
from tests.support.fault_proxy import FaultProxy
from tests.support.mesh import CountingAsyncRedis, sha
from tests.support.recorders import HookCounter
from tests.support.waiting import wait_until
from tests.support.workers import Runner, WorkerFactory
from worqr.embedded import EmbeddedRedis


def test_finishes_ride_on_dequeues_and_each_reaches_the_hooks(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr, redis_url: str
) -> None:
    n = 300
    counting = CountingAsyncRedis.from_url(redis_url)
    hooks = HookCounter()
    worker = new_worker(redis=counting, hooks=[hooks])
    ran: list[str] = []

    @worker.handler("q")
    async def handle(task: str) -> None:
        ran.append(task)

    async def serve() -> None:
        try:
            await worker.run_async()
        finally:  # a client passed in is the caller's to close, on the loop it ran on
            await counting.aclose()

    runner.start(worker, lambda: asyncio.run(serve()))
    client.enqueue_many("q", [f"t{i}" for i in range(n)])
    wait_until(lambda: hooks.total("finished") == n)
    assert sorted(ran) == sorted(f"t{i}" for i in range(n))  # each ran once
    assert hooks.total("fenced") == 0
    assert client.count_processes("q") == client.count_tasks("q") == 0
    assert client.get_stats("q")["finished"] == n
    # Unbatched, each task costs a dequeue and a finish: two calls. Here finishes
    # ride on the dequeues (and share them), so the worker sends fewer.
    calls = sum(counting.scripts[sha(name)] for name in ("complete", "dequeue", "finish"))
    assert counting.scripts[sha("complete")] > 0 and counting.scripts[sha("finish")] == 0
    assert calls < 2 * n, counting.scripts


def test_the_last_finish_lands_without_another_dequeue_to_carry_it(
    runner: Runner, new_worker: WorkerFactory, client: worqr.Worqr
) -> None:
    """An idle queue: the finish is not left waiting for work that never comes."""
    hooks = HookCounter()
    worker = new_worker(hooks=[hooks])
    worker.handler("q")(lambda task: None)
    runner.start(worker)
    for round_ in range(3):
        client.enqueue("q", f"t{round_}")
        wait_until(lambda: client.count_processes("q") == 0 and client.count_tasks("q") == 0)
        wait_until(lambda r=round_: hooks.total("finished") == r + 1)
    assert client.get_stats("q")["finished"] == 3


@pytest.mark.fault
@pytest.mark.slow
def test_a_failed_workers_waiting_finish_is_refused_and_its_task_runs_elsewhere(
    runner: Runner, new_worker: WorkerFactory, fresh_redis: EmbeddedRedis, prefix: str
) -> None:
    """Lease loss while a finish waits: the handler returned, but its finish could
    not reach Redis (a partition) before peers failed the worker. The finish is
    refused when it lands (fenced), the task ran again on a peer, nothing is lost."""
    timing = {"ttl": 1.0, "heartbeat": 0.2, "retry_deadline": 0.3, "socket_timeout": 0.5}
    go = threading.Event()
    runs: list[tuple[str, str]] = []
    with FaultProxy(fresh_redis.port) as proxy:
        zombie_hooks = HookCounter()
        zombie = new_worker(timing, url=proxy.url, hooks=[zombie_hooks])

        @zombie.handler("q")
        def hold(task: str) -> None:
            runs.append(("zombie", task))
            go.wait(30)

        runner.start(zombie)
        old_id = zombie.worker_id
        with worqr.Worqr(fresh_redis.url, settings=worqr.Settings(prefix=prefix, **timing)) as wq:
            wq.enqueue("q", "t")
            wait_until(lambda: runs == [("zombie", "t")])
            proxy.partition()
            go.set()  # the handler returns; its finish cannot reach Redis
            wait_until(lambda: zombie.in_flight == 0)
            assert zombie_hooks.total("finished") == zombie_hooks.total("fenced") == 0
            wait_until(lambda: wq.workers_alive([old_id or ""]) == [False])
            assert wq.reap() == 1  # peers fail the zombie: "t" back at the front
            peer = new_worker(timing, url=fresh_redis.url)
            peer.handler("q")(lambda task: runs.append(("peer", task)))
            runner.start(peer)
            wait_until(lambda: ("peer", "t") in runs)
            proxy.heal()
            wait_until(lambda: zombie_hooks.total("fenced") == 1)
            assert zombie_hooks.total("finished") == 0  # refused: the task was the peer's
            wait_until(lambda: wq.get_stats("q").get("finished") == 1)  # the peer's run
            assert wq.count_tasks("q") == wq.count_processes("q") == 0
            assert wq.count_failed("q") == 0
            assert runs == [("zombie", "t"), ("peer", "t")]
