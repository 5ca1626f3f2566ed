"""Fault scenario 2: a zombie worker (SIGSTOP for 2 x TTL, then SIGCONT)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import worqr
from tests.support.fault_harness import QUEUE, Figures, Scenario, meshes, new_mesh, read_log
from tests.support.waiting import wait_until
from worqr._core.lua import source

pytestmark = [pytest.mark.fault, pytest.mark.slow]

TTL, HEARTBEAT = 1.0, 0.2
TIMING = ("--ttl", str(TTL), "--heartbeat", str(HEARTBEAT), "--concurrency", "2")


@pytest.mark.serial
def test_zombie_is_fenced_cancels_its_handlers_and_re_registers(
    scenario: Callable[..., Scenario], tmp_path: Path
) -> None:
    """Worker Z holds a hold-until-cancelled task and a task that ends while Z is
    frozen. A peer takes both over only after Z's lease expired; when Z resumes,
    its late acknowledgements change nothing (both processes end "fenced"), it
    learns of its lease loss from its heartbeat, cancels its handler and
    re-registers under a new id. Each task is accepted-finished exactly once."""
    seed, rng, server, prefix, client, checker, log = scenario("zombie")
    pause = 2 * TTL
    short = f"s:{int(pause * 1000 * rng.uniform(0.5, 0.8))}"  # ends while Z is frozen

    def runs(event: str, task: str) -> list[dict[str, object]]:
        return [e for e in read_log(log) if e["e"] == event and e.get("t") == task]

    with meshes(tmp_path, server.url, prefix) as made, worqr.Worqr(server.url, prefix=prefix) as wq:
        zombie = new_mesh(made, tmp_path, server.url, prefix).start(1, *TIMING)
        wait_until(lambda: len(wq.get_workers()) == 1, timeout=20)
        wq.enqueue_many(QUEUE, ["h:hold", short])
        wait_until(lambda: runs("start", "h") and runs("start", "s"), timeout=10)
        old_id = wq.get_workers()[0]
        peer = new_mesh(made, tmp_path, server.url, prefix).start(1, *TIMING)
        wait_until(lambda: len(wq.get_workers()) == 2, timeout=20)

        os.kill(zombie.pid, signal.SIGSTOP)
        frozen = time.monotonic()
        wait_until(
            lambda: len(runs("start", "h")) == 2 and len(runs("start", "s")) == 2,
            timeout=10,
            message="a peer takes the frozen worker's tasks over",
        )
        takeover = min(float(str(runs("start", t)[1]["m"])) for t in ("h", "s"))
        # Fencing by TTL: no peer may take the tasks before the lease can have expired.
        assert takeover - frozen >= TTL - HEARTBEAT - 0.05, takeover - frozen
        assert all(runs("start", t)[1]["os"] == peer.pid for t in ("h", "s"))
        time.sleep(max(0.0, frozen + pause - time.monotonic()))
        os.kill(zombie.pid, signal.SIGCONT)
        resumed = time.monotonic()

        def zombie_recovered() -> bool:
            records = read_log(log)
            lost = [e for e in records if e["e"] == "lease_lost" and e["os"] == zombie.pid]
            registered = [e for e in records if e["e"] == "registered" and e["os"] == zombie.pid]
            fenced = [e for e in records if e["e"] == "fenced" and e["os"] == zombie.pid]
            cancelled = [e for e in runs("cancelled", "h") if e["os"] == zombie.pid]
            return bool(lost) and len(registered) == 2 and len(fenced) == 2 and bool(cancelled)

        wait_until(zombie_recovered, timeout=10, message="the zombie notices and recovers")
        recover = time.monotonic() - resumed
        records = read_log(log)
        assert [e["w"] for e in records if e["e"] == "lease_lost"] == [old_id]
        new_id = next(
            e["w"] for e in records[::-1] if e["e"] == "registered" and e["os"] == zombie.pid
        )
        assert new_id != old_id and new_id in wq.get_workers()
        assert old_id not in wq.get_workers()

        wait_until(lambda: peer.pid in {e["os"] for e in runs("done", "s")}, timeout=10)
        assert {e["os"] for e in runs("done", "s")} <= {zombie.pid, peer.pid}
        wait_until(lambda: checker.stats().get("finished") == 1, timeout=10)
        # However late the zombie acknowledges its old processes, Redis refuses.
        finish = client.register_script(source("finish"))
        keys = [checker.key("processes"), checker.key(f"worker:{old_id}")]
        keys += [checker.key("recoveries"), checker.key("stats")]
        for task in ("h", "s"):
            assert finish(keys=keys, args=[runs("start", task)[0]["p"]]) == 0
        assert checker.stats().get("finished") == 1
        assert wq.cancel_tasks(QUEUE, "h:hold") == 1
        wait_until(lambda: len(runs("cancelled", "h")) == 2, timeout=10)
        checker.wait_quiescent(timeout=10)
        stats = checker.stats()
        assert stats.get("finished") == 1 and stats.get("cancelled") == 1, stats
        assert zombie.stop() == 0 and peer.stop() == 0
        assert wq.get_workers() == []

    figures = Figures("zombie", seed, f"SIGSTOP {pause:g}s (2 x TTL)", 2, recover_s=recover)
    checker.verify(figures, read_log(log), ["h", "s"], cancelled=["h"])
    figures.report()
    assert figures.lease_losses == 1 and figures.fenced == 2
    assert checker.orphans() == []
