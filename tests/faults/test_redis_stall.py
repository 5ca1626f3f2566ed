"""Fault scenario 5: Redis stalled (SIGSTOP redis-server) for longer than the TTL."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import worqr
from tests.support.fault_harness import QUEUE, Figures, Scenario, meshes, new_mesh, read_log
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.fault, pytest.mark.slow]

TTL, HEARTBEAT = 1.0, 0.2
TIMING = ("--ttl", str(TTL), "--heartbeat", str(HEARTBEAT), "--concurrency", "4")
PROCESSES = 4


def test_redis_stall_longer_than_ttl(scenario: Callable[..., Scenario], tmp_path: Path) -> None:
    """Every lease expires at once while Redis is frozen. When it resumes, each
    worker learns it lost its lease exactly once, fails its old id and
    re-registers; reapers and the workers themselves may race to requeue the same
    processes, yet each is requeued once (one accepted finish per task), and the
    mesh settles instead of failing itself over and over."""
    seed, rng, server, prefix, _, checker, log = scenario("redis-stall")
    # Long tasks first, so some processes certainly outlive the stall; the rest
    # end during it and race their finish against the lease check on resume.
    longs = [f"L{i}" for i in range(PROCESSES)]
    tasks = longs + [f"t{i}" for i in range(400)]
    stall = 2 * TTL
    with meshes(tmp_path, server.url, prefix) as made, worqr.Worqr(server.url, prefix=prefix) as wq:
        mesh = new_mesh(made, tmp_path, server.url, prefix).start(PROCESSES, *TIMING)
        wait_until(lambda: len(wq.get_workers()) == PROCESSES, timeout=30)
        wq.enqueue_many(QUEUE, [f"{t}:{rng.randint(3000, 3500)}" for t in longs])
        wq.enqueue_many(QUEUE, [f"{t}:{rng.randint(20, 200)}" for t in tasks[len(longs) :]])
        wait_until(lambda: checker.in_process() >= PROCESSES * 4 - 2, timeout=10)
        time.sleep(rng.uniform(0.0, 0.3))
        server.pause()
        time.sleep(stall)
        server.resume()
        resumed = time.monotonic()

        def settled() -> bool:
            lost = [e for e in read_log(log) if e["e"] == "lease_lost"]
            return len({e["os"] for e in lost}) == PROCESSES

        wait_until(settled, timeout=20, message="every worker notices its lease loss")
        recovered = time.monotonic()
        drained = checker.wait_quiescent(timeout=30)
        assert len(wq.get_workers()) == PROCESSES and all(wq.workers_alive(wq.get_workers()))
        assert mesh.running()
        assert mesh.stop() == 0
        assert wq.get_workers() == []

    records = read_log(log)
    figures = Figures("redis-stall", seed, f"SIGSTOP redis-server {stall:g}s (2 x TTL)", len(tasks))
    figures.recover_s = recovered - resumed  # until every worker re-registered
    figures.extra["drain_s"] = round(drained - resumed, 2)
    checker.verify(figures, records, tasks)
    # No crash loop: one lease loss and one re-registration per worker process.
    lost = Counter(e["os"] for e in records if e["e"] == "lease_lost")
    registered = Counter(e["os"] for e in records if e["e"] == "registered")
    assert set(lost.values()) == {1}, lost
    assert set(registered.values()) == {2}, registered
    # No double requeue: every extra run is one requeued process. A dequeue sent
    # just before the stall may run after the leases expired: its processes come
    # back under the lost id, are dropped unstarted, and are requeued by peers.
    stats = checker.stats()
    requeued = sum(stats.get(k, 0) for k in ("recovered", "released", "stopped"))
    dropped = sum(1 for e in records if e["e"] == "dropped")
    assert figures.duplicates + dropped == requeued, (figures.duplicates, dropped, stats)
    assert requeued >= len(longs), "the long tasks outlived the stall: they must come back"
    figures.extra["requeued"] = requeued
    figures.report()
    assert checker.orphans() == []
