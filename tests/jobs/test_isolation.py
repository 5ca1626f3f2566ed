"""Isolated handlers: sync handlers run in child processes the worker owns.

The handlers are the module-level functions of `tests.support.apps.isolated_app`
(a child imports them by module and name); each test registers the ones it
needs on a worker of its own mesh.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import worqr
from tests.support.apps import isolated_app as app
from tests.support.processes import pid_alive as alive
from tests.support.waiting import wait_until
from worqr._runtime.isolation.pool import ChildBootError

from .conftest import Running, fast_worker

Make = Callable[..., worqr.Worqr]

pytestmark = pytest.mark.slow  # each worker starts its children ahead


def isolated_worker(redis_url: str, prefix: str, **settings: object) -> worqr.Worker:
    return fast_worker(redis_url, prefix, concurrency=2, **settings)


def test_an_isolated_handler_ends_as_it_would_in_process(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="worqr.child")
    worker = isolated_worker(redis_url, prefix)
    for queue, function in [("echo", app.echo), ("pid", app.pid), ("flaky", app.flaky)]:
        worker.job(queue, isolated=True)(function)
    worker.job("report", isolated=True)(app.report)
    worker.job("refuse", isolated=True)(app.refuse)
    worker.handler("tasks", isolated=True)(app.task)
    running.start(worker)

    assert wq.result("echo", wq.submit("echo", "hi").id, timeout=20) == "hi"
    assert wq.result("echo", wq.submit("echo", b"\xff\x00").id, timeout=20) == b"\xff\x00"
    child, attempt = wq.result("pid", wq.submit("pid", "x").id, timeout=20).split()  # type: ignore[union-attr]
    assert int(child) != os.getpid() and attempt == "1"

    flaky = wq.submit("flaky", "x", retries=1, backoff=0.05)
    assert wq.result("flaky", flaky.id, timeout=20) == "attempt 2"
    # The same error text an in-process handler leaves: its type and message.
    failed = wq.submit("flaky", "y", retries=0)
    with pytest.raises(worqr.JobFailedError, match=rf"ValueError: first try of {failed.id}"):
        wq.result("flaky", failed.id, timeout=20)
    with pytest.raises(worqr.JobFailedError, match="Fail: no"):
        wq.result("refuse", wq.submit("refuse", "fail", retries=3).id, timeout=20)
    assert wq.result("refuse", wq.submit("refuse", "retry").id, timeout=20) == "retried"
    refused = wq.submit("refuse", "dict", retries=3)  # refused at once, as in process
    with pytest.raises(worqr.JobFailedError, match="must return str, bytes or None, not dict"):
        wq.result("refuse", refused.id, timeout=20)
    assert wq.get_job("refuse", refused.id).attempts == 1  # type: ignore[union-attr]

    reported = wq.submit("report", "me")
    assert wq.result("report", reported.id, timeout=20) == "reported"
    assert wq.get_job("report", reported.id).progress == "half"  # type: ignore[union-attr]
    wait_until(lambda: "to stderr from me" in caplog.text, message="the child's output")
    assert "to stdout from me" in caplog.text  # its prints reach the worker's log too

    tasks = Path(os.environ.get("TMPDIR", "/tmp")) / f"{prefix}-tasks"
    wq.enqueue("tasks", f"{tasks}:one")
    wait_until(lambda: tasks.exists() and "one" in tasks.read_text(), message="the task")
    pid, text, queue = tasks.read_text().split()
    assert int(pid) != os.getpid() and (text, queue) == ("one", "tasks")
    tasks.unlink()


def test_a_timeout_stops_the_child_before_the_attempt_fails_and_the_retry_starts(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    worker = isolated_worker(redis_url, prefix)
    worker.job("sleeper", isolated=True, timeout=0.3)(app.sleeper)
    running.start(worker)
    marker = tmp_path / "marker"
    ref = wq.submit("sleeper", f"1.5:{marker}", retries=1, backoff=0.01)
    with pytest.raises(worqr.JobFailedError, match=r"TimeoutError: ran past 0\.3 s"):
        wq.result("sleeper", ref.id, timeout=20)
    first, second = (int(pid) for pid in Path(f"{marker}.pids").read_text().split())
    assert first != second
    # The retry's handler found the first attempt's child gone when it started:
    # never two runs side by side.
    assert not Path(f"{marker}.overlap").exists()
    info = wq.get_job("sleeper", ref.id)
    assert info is not None and info.ended is not None and info.started is not None
    wait_until(lambda: not alive(second) and not alive(first), message="both children stopped")
    # Each child slept 1.5 s and would then have written the marker: past that
    # time, it still has not, as neither child lived to.
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        assert not marker.exists()
        time.sleep(0.1)


def test_a_crashed_child_fails_only_its_own_job(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = isolated_worker(redis_url, prefix)
    worker.job("segfault", isolated=True)(app.segfault)
    worker.job("sleeper", isolated=True)(app.sleeper)
    running.start(worker)
    beside = wq.submit("sleeper", "0.5:/dev/null")
    wait_until(
        lambda: (wq.get_job("sleeper", beside.id) or beside).progress, message="a job beside"
    )  # type: ignore[attr-defined]
    crashed = wq.submit("segfault", "x", retries=0)
    with pytest.raises(worqr.JobFailedError, match="child process was killed by SIGSEGV"):
        wq.result("segfault", crashed.id, timeout=20)
    assert wq.result("sleeper", beside.id, timeout=20) == "slept"
    info = wq.get_job("sleeper", beside.id)
    assert info is not None and info.attempts == 1  # no recovery charged: the lease held
    assert worker.worker_id in wq.get_workers()
    # The pool started another child: the next job runs.
    assert wq.result("sleeper", wq.submit("sleeper", "0:/dev/null").id, timeout=20) == "slept"


def test_a_child_is_replaced_after_max_jobs_per_child(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix, concurrency=1, max_jobs_per_child=3)
    worker.job("pid", isolated=True)(app.pid)
    running.start(worker)
    pids = [wq.result("pid", wq.submit("pid", str(i)).id, timeout=20) for i in range(6)]
    children = [p.split()[0] for p in pids]  # type: ignore[union-attr]
    assert children[0] == children[1] == children[2] != children[3] == children[4] == children[5]


def test_a_child_is_replaced_once_its_memory_passes_max_memory_per_child(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    # A child starts at 20 to 60 MB resident (its imports); each job keeps 40 MB
    # more. Under 100 MB after one job and over it after two, each child runs two.
    worker = fast_worker(redis_url, prefix, concurrency=1, max_memory_per_child=100 << 20)
    worker.job("leak", isolated=True)(app.leak)
    running.start(worker)
    children = [wq.result("leak", wq.submit("leak", "40").id, timeout=20) for _ in range(6)]
    runs: dict[object, int] = {}
    for child in children:
        runs[child] = runs.get(child, 0) + 1
    assert list(runs.values()) == [2, 2, 2], runs
    assert not any(alive(int(child)) for child in list(runs)[:2])  # replaced children exited


def test_cancelling_a_running_isolated_job_stops_its_child(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = isolated_worker(redis_url, prefix)
    worker.job("sleeper", isolated=True)(app.sleeper)
    running.start(worker)
    ref = wq.submit("sleeper", "30:/dev/null")
    child = wait_until(lambda: (wq.get_job("sleeper", ref.id) or ref).progress, message="the child")  # type: ignore[attr-defined]
    assert wq.cancel_job("sleeper", ref.id)
    wait_until(lambda: not alive(int(child)), message="the child stopped")
    assert wq.get_job("sleeper", ref.id).state == "cancelled"  # type: ignore[union-attr]


def test_what_cannot_be_isolated_is_refused_at_registration(redis_url: str, prefix: str) -> None:
    worker = isolated_worker(redis_url, prefix)

    async def coroutine(payload: str) -> None: ...

    def nested(payload: str) -> None: ...

    with pytest.raises(ValueError, match="async: only sync handlers can be isolated"):
        worker.job("a", isolated=True)(coroutine)
    with pytest.raises(ValueError, match="defined at the top of a module"):
        worker.job("b", isolated=True)(nested)
    with pytest.raises(ValueError, match="defined at the top of a module"):
        worker.handler("c", isolated=True)(lambda task: None)
    with pytest.raises(TypeError, match="isolated must be True or False"):
        worker.job("d", isolated=1)  # type: ignore[arg-type]
    assert worker.queues == []  # nothing registered by a refusal
    with pytest.raises(ValueError, match="max_jobs_per_child"):
        worqr.WorkerSettings(max_jobs_per_child=0)


def test_worker_isolated_runs_every_sync_handler_in_a_child(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix, concurrency=2, isolated=True)
    worker.job("pid")(app.pid)

    @worker.job("in-process")
    async def here(payload: str) -> str:  # async: stays in the worker
        return str(os.getpid())

    running.start(worker)
    child = wq.result("pid", wq.submit("pid", "x").id, timeout=20)
    assert int(child.split()[0]) != os.getpid()  # type: ignore[union-attr]
    assert wq.result("in-process", wq.submit("in-process", "x").id, timeout=20) == str(os.getpid())


def test_a_child_that_cannot_import_its_handler_stops_the_worker_at_start(
    redis_url: str, prefix: str
) -> None:
    def handler(payload: str) -> None: ...

    handler.__qualname__ = "handler"
    handler.__module__ = "no_such_module_for_isolation"
    worker = isolated_worker(redis_url, prefix)
    worker.job("q", isolated=True)(handler)
    started = time.monotonic()
    with pytest.raises(ChildBootError, match=r"could not start: .*exited with status 1"):
        worker.run()
    assert time.monotonic() - started < 30  # refused, not retried as an outage
