"""A live worker is never failed because user code blocks its event loop.

The lease of an `AsyncWorqr` (so of every `Worker`) is kept by a thread with its
own Redis connection. A loop blocked for 2.5 x TTL keeps its lease and its work;
one blocked past `max_blocked` lets go, so peers run its tasks and its late
finish is fenced; the log names the handler that blocked, never its payload.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio

import worqr
from tests.support.job_mesh import Mesh as JobMesh
from tests.support.waiting import async_wait_until, wait_until

pytestmark = pytest.mark.slow


class Mesh(JobMesh):
    """`worqr worker blocked_app:worker --processes 2` and what it recorded."""

    def __init__(self, url: str, prefix: str, log: Path) -> None:
        super().__init__(url, prefix, log, app="blocked_app:worker", record_env="BLOCKED_RECORD")

    def events(self) -> list[tuple[str, str, int]]:
        found = []
        for raw in self.redis.lrange(f"{self.prefix}:events", 0, -1):
            event, name, pid = raw.decode().rsplit(" ", 2)
            found.append((event, name, int(pid)))
        return found

    def of(self, event: str, name: str | None = None) -> list[tuple[str, int]]:
        return [(n, p) for e, n, p in self.events() if e == event and name in (None, n)]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def mesh(redis_url: str, prefix: str, tmp_path: Path) -> Iterator[Mesh]:
    made = Mesh(redis_url, prefix, tmp_path / "worker.log")
    try:
        yield made
    finally:
        made.close()


def test_a_loop_blocked_for_longer_than_the_ttl_keeps_its_lease_and_its_work(
    mesh: Mesh, prefix: str
) -> None:
    mesh.start()
    holds = [f"h{i}" for i in range(6)]
    mesh.client.enqueue_many("holds", holds)
    wait_until(lambda: len(mesh.of("started")) == len(holds), message="holds started")
    secret = f"secret-{prefix}"
    mesh.client.enqueue("blocking", f"2.5:b1:{secret}")  # 2.5 x TTL on the loop
    wait_until(lambda: mesh.of("returned", "b1"), timeout=30, message="the blocked run")
    mesh.redis.set(f"{prefix}:release", 1)
    wait_until(lambda: len(mesh.of("returned")) == len(holds) + 1, message="every hold")
    wait_until(lambda: mesh.client.count_processes("holds") == 0, message="hold acks")

    starts = Counter(name for name, _ in mesh.of("started"))
    assert starts == Counter({"b1": 1, **{hold: 1 for hold in holds}})  # each ran once
    assert len(mesh.of("registered")) == 2  # no worker lost its lease
    assert mesh.of("fenced") == []
    for queue in ("holds", "blocking"):
        stats = mesh.client.get_stats(queue)
        assert stats.get("recovered", 0) == 0 and stats.get("released", 0) == 0, stats
    (blocked,) = mesh.of("loop_blocked")  # the hook heard of it once, with the total
    assert 2.0 <= float(blocked[0]) < 10
    log = mesh.log()
    assert "blocked by the handler of queue 'blocking' (blocked_app.block)" in log
    assert "runs again after" in log
    assert secret not in log  # the payload never reaches the log


def test_a_loop_blocked_past_max_blocked_lets_its_work_go_to_a_peer(
    mesh: Mesh, prefix: str
) -> None:
    mesh.start(2, "--max-blocked", "1.5")
    mesh.client.enqueue("blocking", "6:once-b2:x")  # blocks on its first run only
    wait_until(lambda: len(mesh.of("returned", "once-b2")) == 2, timeout=40, message="2 runs")
    (_, blocked_pid), (_, peer_pid) = mesh.of("started", "once-b2")
    assert blocked_pid != peer_pid  # failed over while the first run still blocked
    wait_until(lambda: mesh.of("fenced"), message="the late finish refused")
    assert [pid for _, pid in mesh.of("fenced")] == [blocked_pid]
    stats = mesh.client.get_stats("blocking")
    assert (stats["finished"], stats["recovered"]) == (1, 1), stats  # one accepted finish
    # Its loop back, the blocked worker finds its lease lost and registers again.
    wait_until(
        lambda: [pid for _, pid in mesh.of("registered")].count(blocked_pid) == 2,
        message="the blocked worker re-registered",
    )
    assert "more than max_blocked (1.5 s)" in mesh.log()


class LoopBlocked(worqr.Hooks):
    def __init__(self) -> None:
        self.seen: list[tuple[float, str]] = []
        self.lost: list[str] = []

    def on_loop_blocked(self, seconds: float, culprit: str) -> None:
        self.seen.append((seconds, culprit))

    def on_lease_lost(self, worker_id: str) -> None:
        self.lost.append(worker_id)


@pytest.mark.parametrize("own_client", [False, True], ids=["from-url", "client-passed-in"])
def test_an_async_client_keeps_its_lease_while_its_own_loop_is_blocked(
    redis_url: str, prefix: str, own_client: bool
) -> None:
    """No Worker: an application's own loop blocks for 2.5 x TTL while a peer
    reaps; the client's process survives and its finish is accepted."""
    settings = worqr.Settings(prefix=prefix, ttl=1.0, heartbeat=0.2)

    async def main() -> None:
        passed = redis.asyncio.Redis.from_url(redis_url) if own_client else None
        hooks = LoopBlocked()
        async with worqr.AsyncWorqr(redis_url, settings=settings, redis=passed) as wq:
            wq.add_hooks(hooks)
            worker = await wq.start_worker()
            await wq.enqueue("q", "task")
            process = await wq.dequeue("q")
            assert process is not None
            reaped: list[int] = []
            stop = threading.Event()
            with worqr.Worqr(redis_url, settings=settings) as peer:

                def reap() -> None:
                    while not stop.wait(0.2):
                        reaped.append(peer.reap())

                reaper = threading.Thread(target=reap)
                reaper.start()
                try:
                    time.sleep(2.5)  # noqa: ASYNC251 - the application blocks its own loop
                finally:
                    stop.set()
                    reaper.join()
            assert len(reaped) >= 8 and sum(reaped) == 0  # peers reaped; nobody failed us
            assert await wq.finish_process(process)
            assert wq.worker_id == worker and hooks.lost == []
            await async_wait_until(lambda: hooks.seen, message="the loop_blocked hook")
            seconds, culprit = hooks.seen[0]
            assert 2.0 <= seconds < 5 and "main" in culprit
        if passed is not None:
            await passed.aclose()

    asyncio.run(main())
