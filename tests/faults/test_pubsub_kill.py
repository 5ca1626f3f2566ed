"""Fault scenario 6: the workers' subscriber connections are killed over and over
(`CLIENT KILL TYPE pubsub`) while tasks trickle in one at a time."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import worqr
from tests.support.fault_harness import QUEUE, Figures, Scenario, meshes, new_mesh, read_log
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.fault, pytest.mark.slow]

TTL, HEARTBEAT = 1.0, 0.2
POLL = 2.0  # the fallback poll: the worst case a lost wake-up may cost
PROCESSES = 2


def test_killed_subscribers_lose_no_wake_up(
    scenario: Callable[..., Scenario], tmp_path: Path
) -> None:
    """Each round kills every subscriber connection just before, just after, or
    a random moment around one enqueue. A worker whose wake-up was published
    while it was disconnected drains the queue when it resubscribes, so every
    task starts well within the fallback poll interval."""
    seed, rng, server, prefix, client, checker, log = scenario("pubsub-kill")
    rounds = 40
    latencies: list[float] = []
    kills = 0
    options = ("--ttl", str(TTL), "--heartbeat", str(HEARTBEAT), "--concurrency", "1")
    with meshes(tmp_path, server.url, prefix) as made, worqr.Worqr(server.url, prefix=prefix) as wq:
        mesh = new_mesh(made, tmp_path, server.url, prefix, FAULT_POLL=str(POLL))
        mesh.start(PROCESSES, *options)
        wait_until(lambda: len(wq.get_workers()) == PROCESSES, timeout=30)
        # Both workers subscribed and idle: the first enqueue has someone to wake.
        wait_until(lambda: client.scard(checker.key("idle")) == PROCESSES, timeout=10)

        def kill() -> int:
            return int(client.client_kill_filter(_type="pubsub"))

        for index in range(rounds):
            when = rng.choice(["before", "after", "around"])
            if when == "before":
                kills += kill()
            sent = time.monotonic()
            wq.enqueue(QUEUE, f"t{index}")
            if when == "after":
                kills += kill()
            elif when == "around":
                time.sleep(rng.uniform(0.0, 0.02))
                kills += kill()

            def started(task: str = f"t{index}") -> float | None:
                runs = [e for e in read_log(log) if e["e"] == "start" and e["t"] == task]
                return float(runs[0]["m"]) if runs else None

            start = wait_until(started, timeout=POLL + 3, message=f"t{index} starts")
            latencies.append(start - sent)
            # The next round begins with every worker idle again (one task at a time).
            done = index + 1
            wait_until(lambda n=done: checker.quiescent() and checker.stats().get("finished") == n)
            wait_until(lambda: client.scard(checker.key("idle")) == PROCESSES, timeout=POLL + 3)

        assert mesh.stop() == 0
        assert wq.get_workers() == []

    worst = max(latencies)
    figures = Figures("pubsub-kill", seed, f"{kills} x CLIENT KILL TYPE pubsub", rounds)
    figures.recover_s = worst
    figures.extra.update(
        median_start_s=round(statistics.median(latencies), 3), worst_start_s=round(worst, 3)
    )
    checker.verify(figures, read_log(log), [f"t{i}" for i in range(rounds)])
    figures.report()
    assert kills >= rounds, "the kills hit no subscriber"
    # Re-subscribing drains at once: no task waits for the fallback poll.
    assert worst < POLL, f"a wake-up was lost: a task waited {worst:.2f}s ({seed=})"
    assert checker.orphans() == []
