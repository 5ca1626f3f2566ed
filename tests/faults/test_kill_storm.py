"""Fault scenario 1: a SIGKILL storm over one real `worqr worker --processes 6`."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import worqr
from tests.support.fault_harness import (
    QUEUE,
    Figures,
    Scenario,
    meshes,
    new_mesh,
    read_log,
    worker_ids,
)
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.fault, pytest.mark.slow]

TTL, HEARTBEAT = 1.0, 0.2
KILLS = 30
TIMING = ("--ttl", str(TTL), "--heartbeat", str(HEARTBEAT), "--grace", "1")


def test_sigkill_storm_loses_nothing(scenario: Callable[..., Scenario], tmp_path: Path) -> None:
    """2,000 tasks (the issue says 10k: scaled down to keep the suite within the CI
    budget on 2 cores) on 6 worker processes of one ``worqr worker --processes 6``,
    a random child SIGKILLed every 200-500 ms until every task has been taken at
    least once or 30 kills were made (more kills only keep the machine busy
    starting replacements, which on 2 loaded cores starves the peers that must
    fail the last victim).
    Victims are children that have registered, and a kill waits while fewer than
    two have (replacements start after a backoff that grows while children die
    young): a registered peer is left to fail each victim.

    The supervisor runs with its default restart policy: kills are never
    start-up failures, so its crash-loop guard (10 start-up failures a minute)
    never stops the pool, however many children the storm kills.
    """
    seed, rng, server, prefix, _, checker, log = scenario("kill-storm")
    total = 2000
    env = {"FAULT_MAX_RECOVERIES": "1000"}  # a storm is not a poison pill
    with meshes(tmp_path, server.url, prefix) as made, worqr.Worqr(server.url, prefix=prefix) as wq:
        mesh = new_mesh(made, tmp_path, server.url, prefix, **env)
        mesh.start(6, "--concurrency", "2", *TIMING)
        wait_until(lambda: len(wq.get_workers()) == 6, timeout=30, message="6 workers register")
        tasks = [f"t{i}" for i in range(total)]
        wq.enqueue_many(QUEUE, [f"{t}:{rng.randint(20, 80)}" for t in tasks])
        started = time.monotonic()

        killed: set[int] = set()
        last_fault, last_victim = time.monotonic(), 0
        backlog_at_last = total
        while checker.queued() > 0 and len(killed) < KILLS and time.monotonic() - started < 60:
            time.sleep(rng.uniform(0.2, 0.5))
            registered = {e["os"] for e in read_log(log) if e["e"] == "registered"}
            victims = sorted(pid for pid in mesh.workers() if pid in registered)
            if len(victims) < 2:
                continue  # leave a registered peer to fail the victim (replacements start up)
            pid = rng.choice(victims)
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
            last_fault, last_victim = time.monotonic(), pid
            backlog_at_last = checker.queued()
            assert checker.misplaced() == [], "I2: a task is in two places at once"

        # I5: the last victim is failed (its tasks back at the front) within TTL
        # plus one reaping interval, and the queue drains in the time the work
        # left at that moment needs.
        last_id = worker_ids(read_log(log), [last_victim])
        wait_until(lambda: not checker.workers() & last_id, timeout=30, interval=0.02)
        recover = time.monotonic() - last_fault
        assert recover <= TTL + HEARTBEAT + 1.0, f"I5: failover took {recover:.2f}s ({seed=})"
        gone = worker_ids(read_log(log), killed)
        drained = checker.wait_quiescent(timeout=60, gone=gone)
        bound = TTL + HEARTBEAT + 3.0 + backlog_at_last * 0.05 / 6
        took = drained - last_fault
        assert took <= bound, f"I5: drained {took:.2f}s after the last kill > {bound:.2f}s"
        assert mesh.running(), "the supervisor gave up during the storm"
        # Every killed child is replaced (a child SIGTERMed while it still imports
        # would be a clean stop too, but then it could not be seen registering).
        wait_until(
            lambda: len(wq.get_workers()) == 6 and all(wq.workers_alive(wq.get_workers())),
            timeout=30,
            message="the supervisor restarts every killed child",
        )
        assert mesh.stop() == 0
        assert mesh.text().count("exited with signal SIGKILL") == len(killed)
        assert wq.get_workers() == []

    figures = Figures("kill-storm", seed, f"{len(killed)} x SIGKILL", total, recover_s=recover)
    checker.verify(figures, read_log(log), tasks, killed_pids=killed)
    figures.extra["drain_after_last_fault_s"] = round(took, 2)
    figures.extra["drain_s"] = round(drained - started, 2)
    figures.report()
    assert len(killed) > 10, "the storm was too short to mean anything (above the default limit)"
    assert "giving up" not in mesh.text() and "start-up failure" not in mesh.text()
    assert checker.orphans() == [], "keys left behind after shutdown"
