"""Fault scenario 8: cancellations racing dequeue, finish and worker death."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
PROCESSES = 3


def cancel(wq: worqr.Worqr, task: str) -> tuple[int, set[str]]:
    """`Worqr.cancel_tasks`, also returning the ids of the processes it ended
    (the cancel script's reply, which the public method sums up)."""
    plan = wq._core.producing.cancel_tasks(QUEUE, task)
    replies: dict[str | None, object] = {}
    try:
        request = next(plan)
        while True:  # the plan reads the queue's kind first, then cancels
            reply = wq._execute(request, wq.settings.retry_deadline)
            replies[getattr(request, "script", None)] = reply
            request = plan.send(reply)
    except StopIteration as stop:
        count = int(stop.value)
    cancelled = replies["cancel"]
    assert isinstance(cancelled, list)
    return count, {p.decode() for p in cancelled[1:]}


class Killer(threading.Thread):
    """SIGKILLs a random registered worker process now and then."""

    def __init__(self, mesh: Any, log: Path, rng: random.Random) -> None:
        super().__init__(name="fault-killer", daemon=True)
        self.mesh, self.log, self.rng = mesh, log, rng
        self.budget = 9
        self.killed: set[int] = set()
        self.stopping = threading.Event()
        self.last = 0.0

    def run(self) -> None:
        while len(self.killed) < self.budget and not self.stopping.wait(self.rng.uniform(0.4, 0.9)):
            registered = {e["os"] for e in read_log(self.log) if e["e"] == "registered"}
            victims = sorted(p for p in self.mesh.workers() if p in registered)
            if victims:
                victim = self.rng.choice(victims)
                os.kill(victim, signal.SIGKILL)
                self.killed.add(victim)
                self.last = time.monotonic()


def test_a_cancelled_task_never_runs_again(
    scenario: Callable[..., Scenario], tmp_path: Path
) -> None:
    """300 tasks stream in; 40% are cancelled at a random moment (at once: racing
    the dequeue; a little later: racing the run and the finish) while worker
    processes are SIGKILLed (their cancelled processes must not come back). After
    a cancel returns, the task is never dequeued again: the only runs that start
    afterwards are of processes the cancel itself ended (their worker had not
    heard yet), and none of them is accepted as finished."""
    seed, rng, server, prefix, _, checker, log = scenario("cancel-race")
    tasks = [f"t{i}" for i in range(300)]
    payload = {t: f"{t}:{rng.randint(10, 120)}" for t in tasks}
    cancelled_at: dict[str, float] = {}
    ended: dict[str, set[str]] = {}
    options = ("--ttl", str(TTL), "--heartbeat", str(HEARTBEAT), "--concurrency", "3")
    with meshes(tmp_path, server.url, prefix) as made, worqr.Worqr(server.url, prefix=prefix) as wq:
        mesh = new_mesh(made, tmp_path, server.url, prefix, FAULT_MAX_RECOVERIES="100")
        mesh.start(PROCESSES, *options)
        wait_until(lambda: len(wq.get_workers()) == PROCESSES, timeout=30)
        killer = Killer(mesh, log, rng)
        killer.start()
        attempted: set[str] = set()

        def cancel_now(task: str) -> None:
            attempted.add(task)
            count, pids = cancel(wq, payload[task])
            if count:
                cancelled_at[task] = time.monotonic()
                ended[task] = pids

        pending: list[tuple[float, str]] = []
        for start in range(0, len(tasks), 10):
            batch = tasks[start : start + 10]
            wq.enqueue_many(QUEUE, [payload[t] for t in batch])
            now = time.monotonic()
            for task in batch:
                if rng.random() < 0.4:  # at once, or up to 200 ms later
                    pending.append((now + rng.choice([0.0, rng.uniform(0, 0.2)]), task))
            pending.sort()
            while pending and pending[0][0] <= time.monotonic() + 0.03:
                cancel_now(pending.pop(0)[1])
            time.sleep(0.12)
        for _, task in pending:
            cancel_now(task)
        killer.stopping.set()
        killer.join(10)
        gone = worker_ids(read_log(log), killer.killed)
        drained = checker.wait_quiescent(timeout=30, gone=gone)
        wait_until(
            lambda: len(wq.get_workers()) == PROCESSES and all(wq.workers_alive(wq.get_workers())),
            timeout=30,
        )
        assert mesh.stop() == 0
        assert wq.get_workers() == []

    records = read_log(log)
    figures = Figures(
        "cancel-race",
        seed,
        f"{len(cancelled_at)} cancels, {len(killer.killed)} x SIGKILL",
        len(tasks),
        recover_s=drained - killer.last if killer.killed else None,
    )
    # A task whose cancel found nothing had finished already.
    done = {e["t"] for e in records if e["e"] == "done"}
    assert attempted - set(cancelled_at) <= done
    late = 0
    for entry in records:
        task = entry.get("t")
        if entry["e"] == "start" and task in cancelled_at and entry["m"] > cancelled_at[task]:
            assert entry["p"] in ended[task], f"cancelled task {task} was dequeued again: {entry}"
            late += 1
    checker.verify(figures, records, tasks, cancelled=cancelled_at, killed_pids=killer.killed)
    in_process = sum(1 for pids in ended.values() if pids)
    figures.extra.update(
        cancelled_queued=len(cancelled_at) - in_process,
        cancelled_in_process=in_process,
        late_starts=late,
    )
    figures.report()
    assert len(cancelled_at) > 50 and in_process > 5 and len(killer.killed) >= 3
    assert checker.orphans() == []
