"""The isolated handlers' pool on its own (no Redis): how a `Halt` reaches a
run's child, and only that run's.

A run attaches its child before the job is sent and detaches it before the
child goes back to the pool; a halt between the two stops the child, one
before keeps the job from being sent, one after reaches nothing. The pool
here has one slot (and a spare): a child that comes back is the next one out.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import pid_alive
from tests.support.waiting import wait_until
from worqr._process import Process
from worqr._runtime.isolation.outcomes import ChildDiedError
from worqr._runtime.isolation.pool import (
    ChildPool,
    HaltedBeforeStartError,
    PoolSettings,
    Reports,
)
from worqr._runtime.isolation.targets import target_of

from ..support.apps import isolated_app as app

pytestmark = pytest.mark.slow  # the pool boots its children ahead

GRACE = 2.0
DROP = Reports(lambda value: None, lambda line: None)


@pytest.fixture
def pool() -> Iterator[ChildPool]:
    pool = ChildPool({"hold": target_of(app.hold, "hold")}, PoolSettings(size=1, grace=GRACE))
    pool.start()
    try:
        yield pool
    finally:
        pool.close()


def hold(seconds: float, path: Path) -> Process:
    text = f"{seconds}:{path}"
    return Process(f"pid-{path.name}", "hold", text, text.encode(), "worker-1")


def in_thread(pool: ChildPool, process: Process, halt: Any) -> dict[str, Any]:
    """Run ``process`` on a thread; the dict gets its ``result`` or ``error``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = pool.run("hold", process, DROP, halt)
        except Exception as error:
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    outcome["thread"] = thread
    return outcome


def test_a_halt_before_the_job_is_sent_keeps_it_from_every_child(
    pool: ChildPool, tmp_path: Path
) -> None:
    children = sorted(pool.pids)
    halt = pool.halt()
    halt.halt()
    with pytest.raises(HaltedBeforeStartError):
        pool.run("hold", hold(0, tmp_path / "never"), DROP, halt)
    assert not (tmp_path / "never").exists()
    # No child was stopped for it: the same children run the next job.
    assert sorted(pool.pids) == children
    pid = pool.run("hold", hold(0, tmp_path / "next"), DROP, pool.halt())
    assert int(pid) in children


def test_a_halt_stops_the_child_and_the_run_ends_once_it_is_gone(
    pool: ChildPool, tmp_path: Path
) -> None:
    halt = pool.halt()
    started = tmp_path / "started"
    outcome = in_thread(pool, hold(60, started), halt)
    child = int(wait_until(lambda: started.exists() and started.read_text(), message="start"))
    halt.halt()
    outcome["thread"].join(GRACE + 5)
    assert not outcome["thread"].is_alive()
    assert isinstance(outcome.get("error"), ChildDiedError), outcome
    assert "status 143" in str(outcome["error"])  # SIGTERM: the handler unwound
    assert not pid_alive(child)  # gone (and reaped) before the run returned
    # A replacement boots; the pool serves on.
    again = tmp_path / "again"
    assert int(pool.run("hold", hold(0, again), DROP, pool.halt())) != child


def test_a_halt_after_its_run_ended_never_reaches_the_child_s_next_job(
    pool: ChildPool, tmp_path: Path
) -> None:
    first = pool.halt()
    child = int(pool.run("hold", hold(0, tmp_path / "first"), DROP, first))
    started = tmp_path / "second"
    outcome = in_thread(pool, hold(0.5, started), pool.halt())
    assert int(wait_until(lambda: started.exists() and started.read_text())) == child
    first.halt()  # late: the first run gave its child back
    outcome["thread"].join(10)
    assert outcome == {"result": str(child), "thread": outcome["thread"]}
    assert pid_alive(child)
