"""Fault scenario 9: a partition between one worker and Redis, made by a TCP
fault proxy (tests/fault_proxy.py) that holds that worker's traffic."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import worqr
from tests.support.fault_harness import QUEUE, Figures, Scenario, meshes, new_mesh, read_log
from tests.support.fault_proxy import FaultProxy
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.fault, pytest.mark.slow]

TTL, HEARTBEAT = 1.5, 0.3
TIMING = ("--ttl", str(TTL), "--heartbeat", str(HEARTBEAT), "--concurrency", "2")


@pytest.mark.serial
def test_a_partitioned_worker_stops_before_its_peers_take_over(
    scenario: Callable[..., Scenario], tmp_path: Path
) -> None:
    """Worker W reaches Redis through the proxy and holds two long tasks; the
    proxy cuts it off for 1.5 x TTL. W cannot refresh its lease, so it stops its
    handlers (self-fencing) before the lease can expire; only then may a peer
    take the tasks over. When the partition heals, W learns it lost its lease,
    its late acknowledgements are refused, it re-registers and works again."""
    seed, rng, server, prefix, _, checker, log = scenario("partition")
    longs = ["L0", "L1"]
    shorts = [f"t{i}" for i in range(200)]
    partition = 1.5 * TTL

    def runs(event: str, task: str) -> list[dict[str, Any]]:
        return [e for e in read_log(log) if e["e"] == event and e.get("t") == task]

    with (
        FaultProxy(server.port) as proxy,
        meshes(tmp_path, server.url, prefix) as made,
        worqr.Worqr(server.url, prefix=prefix) as wq,
    ):
        env = {"FAULT_SOCKET_TIMEOUT": "0.5"}
        cut = new_mesh(made, tmp_path, proxy.url, prefix, **env).start(1, *TIMING)
        wait_until(lambda: len(wq.get_workers()) == 1, timeout=20)
        wq.enqueue_many(QUEUE, [f"{t}:{rng.randint(4000, 5000)}" for t in longs])
        wait_until(lambda: all(runs("start", t) for t in longs), timeout=10)
        peer = new_mesh(made, tmp_path, server.url, prefix, **env).start(1, *TIMING)
        wait_until(lambda: len(wq.get_workers()) == 2, timeout=20)
        wq.enqueue_many(QUEUE, [f"{t}:{rng.randint(5, 30)}" for t in shorts])

        proxy.partition()
        cut_at = time.monotonic()
        wait_until(
            lambda: all(len(runs("start", t)) == 2 for t in longs),
            timeout=10,
            message="the peer takes the long tasks over",
        )
        time.sleep(max(0.0, cut_at + partition - time.monotonic()))
        proxy.heal()
        healed = time.monotonic()
        wait_until(
            lambda: any(e["e"] == "lease_lost" and e["os"] == cut.pid for e in read_log(log)),
            timeout=10,
            message="the partitioned worker learns it lost its lease",
        )
        recovered = time.monotonic()
        for task in longs:
            first, second = runs("start", task)
            assert first["os"] == cut.pid and second["os"] == peer.pid
            stopped = [e for e in runs("cancelled", task) if e["os"] == cut.pid]
            assert stopped, f"{task}: the partitioned worker never stopped its handler"
            margin = second["m"] - stopped[0]["m"]
            assert margin > 0, f"{task}: a peer took the task {-margin:.2f}s before W stopped"
            assert stopped[0]["m"] - cut_at < TTL, "W stopped only after its lease could expire"
        drained = checker.wait_quiescent(timeout=30)
        assert len(wq.get_workers()) == 2  # W re-registered
        assert cut.stop() == 0 and peer.stop() == 0
        assert wq.get_workers() == []

    records = read_log(log)
    figures = Figures(
        "partition",
        seed,
        f"1 worker cut off from Redis {partition:g}s (1.5 x TTL)",
        len(longs) + len(shorts),
        recover_s=recovered - healed,
    )
    margins = []
    for task in longs:
        stopped = next(e for e in records if e["e"] == "cancelled" and e["t"] == task)
        taken = [e for e in records if e["e"] == "start" and e["t"] == task][1]
        margins.append(taken["m"] - stopped["m"])
    figures.extra.update(stop_margin_s=round(min(margins), 2), drain_s=round(drained - healed, 2))
    checker.verify(figures, records, longs + shorts)
    figures.report()
    assert checker.orphans() == []
