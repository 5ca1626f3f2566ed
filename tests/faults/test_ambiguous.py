"""Fault scenario 3: ambiguous results. `DEBUG SLEEP` freezes Redis for longer
than the clients' socket timeout while producers enqueue and workers dequeue
and finish, so commands time out after Redis may (or may not) have run them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

import worqr
from tests.support.fault_harness import QUEUE, Figures, Scenario, meshes, new_mesh, read_log
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.fault, pytest.mark.slow]

SOCKET_TIMEOUT = 0.25
SLEEP = 0.8  # > socket timeout; < TTL, so no lease expires: every effect is ambiguity
TIMING = ("--ttl", "3", "--heartbeat", "0.5", "--concurrency", "4")


class Producer(threading.Thread):
    def __init__(self, url: str, prefix: str, name: str) -> None:
        super().__init__(name=f"producer-{name}", daemon=True)
        settings = worqr.Settings(prefix=prefix, socket_timeout=SOCKET_TIMEOUT, retry_deadline=5)
        self.client = worqr.Worqr(url, settings=settings)
        self.tag = name
        self.acked: list[str] = []
        self.ambiguous: list[str] = []
        self.refused: list[str] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        count = 0
        while not self.stopping.wait(0.002):
            task = f"{self.tag}{count}"
            count += 1
            try:
                self.client.enqueue(QUEUE, f"{task}:{count % 7}")
            except worqr.AmbiguousResultError:
                self.ambiguous.append(task)
            except worqr.RedisUnavailableError:
                self.refused.append(task)
            else:
                self.acked.append(task)


def test_ambiguous_results_neither_duplicate_nor_hide(
    scenario: Callable[..., Scenario], tmp_path: Path
) -> None:
    """Enqueues that time out raise AmbiguousResultError instead of being resent
    (a resend could push twice); dequeues and finishes that time out are resent
    safely (a dequeue is keyed by its process ids, a finish is idempotent). So:
    each acknowledged task runs exactly once, each ambiguous one at most once,
    and nothing stays hidden in a process nobody holds."""
    seed, rng, server, prefix, _, checker, log = scenario("ambiguous")
    sleeps = 5
    initial = [f"i{n}" for n in range(300)]
    with meshes(tmp_path, server.url, prefix) as made, worqr.Worqr(server.url, prefix=prefix) as wq:
        mesh = new_mesh(
            made, tmp_path, server.url, prefix, FAULT_SOCKET_TIMEOUT=str(SOCKET_TIMEOUT)
        )
        mesh.start(2, *TIMING)
        wait_until(lambda: len(wq.get_workers()) == 2, timeout=30)
        wq.enqueue_many(QUEUE, [f"{t}:{rng.randint(0, 10)}" for t in initial])
        producers = [Producer(server.url, prefix, name) for name in ("a", "b")]
        for producer in producers:
            producer.start()
        with redis.Redis.from_url(server.url, socket_timeout=10) as admin:
            for _ in range(sleeps):
                time.sleep(rng.uniform(0.2, 0.6))
                admin.execute_command("DEBUG", "SLEEP", SLEEP)
            last = time.monotonic()
        time.sleep(0.3)  # the producers go on a little after the last stall (the scenario)
        for producer in producers:
            producer.stopping.set()
            producer.join(30)
            producer.client.close()
        drained = checker.wait_quiescent(timeout=30)
        assert mesh.running() and "Traceback" not in mesh.text()
        assert "Timeout" in mesh.text(), "the workers never saw a timeout"
        assert mesh.stop() == 0
        assert wq.get_workers() == []

    records = read_log(log)
    ran = {e["t"] for e in records if e["e"] == "start"}
    acked = [t for p in producers for t in p.acked]
    ambiguous = [t for p in producers for t in p.ambiguous]
    refused = [t for p in producers for t in p.refused]
    assert not ran & set(refused)
    applied = [t for t in ambiguous if t in ran]
    tasks = initial + acked + applied
    figures = Figures(
        "ambiguous",
        seed,
        f"{sleeps} x DEBUG SLEEP {SLEEP}s > socket timeout {SOCKET_TIMEOUT}s",
        len(tasks),
        recover_s=drained - last,
    )
    figures.extra.update(ambiguous=len(ambiguous), ambiguous_applied=len(applied))
    # No kill, no lease loss: any second run would be a resend's duplicate (I4).
    checker.verify(figures, records, tasks)
    figures.report()
    assert figures.duplicates == 0 and figures.lease_losses == 0
    assert ambiguous, "no enqueue was caught by a sleep"
    assert checker.orphans() == []
