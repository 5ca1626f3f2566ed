"""Job handlers in the worker runtime: results, retries with backoff, Retry and
Fail, timeouts, progress, cancellation, graceful stop, delayed-job precision."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

import worqr
from tests.support.waiting import wait_until

from .conftest import Running, fast_worker

Make = Callable[..., worqr.Worqr]


class Outcomes(worqr.Hooks):
    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.waited: list[float] = []
        # (event, queue, job id, attempt, the error's type name) of each job run
        self.runs: list[tuple[str, str, str, int, str | None]] = []

    def on_finished(self, queue: str, seconds: float) -> None:
        self.seen["finished"] += 1

    def on_failed(self, queue: str, seconds: float) -> None:
        self.seen["failed"] += 1

    def on_retried(self, queue: str) -> None:
        self.seen["retried"] += 1

    def on_cancelled(self, queue: str) -> None:
        self.seen["cancelled"] += 1

    def on_fenced(self, queue: str) -> None:
        self.seen["fenced"] += 1

    def on_job_started(self, queue: str, waited: float) -> None:
        self.waited.append(waited)

    def on_job_timeout(self, queue: str) -> None:
        self.seen["timeout"] += 1

    def on_job_run_started(self, run: worqr.JobRun) -> None:
        self.runs.append(("started", run.queue, run.job_id, run.attempt, None))

    def on_job_run_ended(
        self, run: worqr.JobRun, outcome: str, seconds: float, error: BaseException | None
    ) -> None:
        assert outcome in worqr.JOB_RUN_OUTCOMES and seconds >= 0
        kind = type(error).__name__ if error is not None else None
        self.runs.append((outcome, run.queue, run.job_id, run.attempt, kind))


def test_results_of_sync_and_async_handlers(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix, jobs=worqr.JobSettings(max_result_bytes=100))

    @worker.job("sync")
    def sync(payload: str) -> object:
        return {"text": "t", "bytes": b"\x01", "none": None, "int": 7, "big": "x" * 101}[payload]

    @worker.job("async")
    async def asynchronous(payload: str) -> bytes:
        await asyncio.sleep(0)
        return payload.encode() * 2

    running.start(worker)
    refs = {p: wq.submit("sync", p) for p in ("text", "bytes", "none", "int", "big")}
    assert wq.result("sync", refs["text"].id, timeout=10) == "t"
    assert wq.result("sync", refs["bytes"].id, timeout=10) == b"\x01"
    assert wq.result("sync", refs["none"].id, timeout=10) is None
    with pytest.raises(worqr.JobFailedError, match="must return str, bytes or None, not int"):
        wq.result("sync", refs["int"].id, timeout=10)
    with pytest.raises(worqr.JobFailedError, match="101 bytes; the limit is 100"):
        wq.result("sync", refs["big"].id, timeout=10)
    assert wq.get_job("sync", refs["int"].id).attempts == 1  # type: ignore[union-attr]  # no retry
    assert wq.result("async", wq.submit("async", "ab").id, timeout=10) == b"abab"


def test_failures_retry_with_backoff_then_succeed(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    outcomes = Outcomes()
    worker = fast_worker(redis_url, prefix)
    worker.add_hooks(outcomes)
    starts: list[float] = []

    @worker.job("q", retries=3, backoff=worqr.Backoff(base=0.2, factor=2.0, jitter=0.0))
    def flaky(payload: str) -> str:
        starts.append(time.monotonic())
        if worqr.current_job().attempt < 4:
            raise ConnectionError("upstream down")
        return "finally"

    running.start(worker)
    ref = wq.submit("q", "x")
    assert wq.result("q", ref.id, timeout=20) == "finally"
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(gaps) == 3
    for gap, backoff in zip(gaps, (0.2, 0.4, 0.8), strict=True):
        assert backoff - 0.02 <= gap < backoff + 1.0, gaps  # never early; late by a hop
    # The hook runs once Redis answered the finish: a waiter may read it first.
    wait_until(lambda: outcomes.seen["finished"] == 1, message="the finished hook")
    assert outcomes.seen == Counter({"retried": 3, "finished": 1})
    # The job-run hooks tell each run apart: its attempt, how it ended, and why.
    expected = []
    for attempt in (1, 2, 3):
        expected += [("started", "q", ref.id, attempt, None)]
        expected += [("retried", "q", ref.id, attempt, "ConnectionError")]
    expected += [("started", "q", ref.id, 4, None), ("finished", "q", ref.id, 4, None)]
    assert outcomes.runs == expected
    info = wq.get_job("q", ref.id)
    assert info is not None and info.attempts == 4 and info.error is None


def test_retry_with_a_delay_and_fail_now(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)
    starts: list[float] = []

    @worker.job("q", retries=5)
    def handle(payload: str) -> str:
        starts.append(time.monotonic())
        if payload == "fail":
            raise worqr.Fail("bad input")
        if len(starts) == 1:
            raise worqr.Retry(delay=0.4)
        return "ok"

    running.start(worker)
    retried = wq.submit("q", "retry")
    assert wq.result("q", retried.id, timeout=10) == "ok"
    assert starts[1] - starts[0] >= 0.38
    failed = wq.submit("q", "fail")
    with pytest.raises(worqr.JobFailedError) as caught:
        wq.result("q", failed.id, timeout=10)
    assert caught.value.error == "Fail: bad input"
    assert wq.get_job("q", failed.id).attempts == 1  # type: ignore[union-attr]


def test_timeouts_fail_the_attempt_async_and_sync(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    outcomes = Outcomes()
    worker = fast_worker(redis_url, prefix)
    worker.add_hooks(outcomes)
    saw_cancel = threading.Event()
    release = threading.Event()

    @worker.job("async", timeout=0.3)
    async def slow_async(payload: str) -> str:
        await asyncio.sleep(30)
        return "never"

    @worker.job("sync", timeout=0.3)
    def slow_sync(payload: str) -> str:
        if worqr.current_job().cancelled.wait(10):
            saw_cancel.set()
        release.wait(10)
        return "too late"

    running.start(worker)
    a = wq.submit("async", "a", retries=0)
    with pytest.raises(worqr.JobFailedError, match=r"TimeoutError: ran past 0\.3 s"):
        wq.result("async", a.id, timeout=10)
    s = wq.submit("sync", "s", retries=0)
    # The sync handler cannot be stopped: its attempt fails at once anyway.
    with pytest.raises(worqr.JobFailedError, match=r"TimeoutError: ran past 0\.3 s"):
        wq.result("sync", s.id, timeout=10)
    # told at once (its thread may run a moment after the failure is written)
    assert saw_cancel.wait(10) and worker.in_flight == 1  # still running, still holding its slot
    release.set()
    wait_until(lambda: worker.in_flight == 0)
    assert wq.get_job("sync", s.id).state == "failed"  # type: ignore[union-attr]  # its return changed nothing
    assert outcomes.seen["timeout"] == 2  # the async one (cancelled) and the sync one
    ended = sorted(run for run in outcomes.runs if run[0] != "started")
    assert ended == sorted(
        [("failed", "async", a.id, 1, "TimeoutError"), ("failed", "sync", s.id, 1, "TimeoutError")]
    )


def test_progress_is_stored_and_the_last_value_lands_before_the_end(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)

    @worker.job("q")
    def report(payload: str) -> str:
        job = worqr.current_job()
        for step in range(50):
            job.progress(f"step {step}")
        with pytest.raises(ValueError, match="4096"):
            job.progress("x" * 5000)
        with pytest.raises(TypeError):
            job.progress(5)  # type: ignore[arg-type]
        return "done"

    running.start(worker)
    ref = wq.submit("q", "p")
    assert wq.result("q", ref.id, timeout=10) == "done"
    assert wq.get_job("q", ref.id).progress == "step 49"  # type: ignore[union-attr]
    with pytest.raises(worqr.WorqrError, match="outside a worqr job handler"):
        worqr.current_job()


def test_cancelling_a_running_job_stops_its_handler(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    outcomes = Outcomes()
    worker = fast_worker(redis_url, prefix)
    worker.add_hooks(outcomes)
    started = threading.Event()
    stopped = threading.Event()

    @worker.job("q")
    async def hold(payload: str) -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()
            raise

    running.start(worker)
    ref = wq.submit("q", "long")
    assert started.wait(10)
    assert wq.cancel_job("q", ref.id)
    assert stopped.wait(10)
    wait_until(lambda: outcomes.seen["cancelled"] == 1)
    assert outcomes.runs == [("started", "q", ref.id, 1, None), ("cancelled", "q", ref.id, 1, None)]
    assert wq.get_job("q", ref.id).state == "cancelled"  # type: ignore[union-attr]


def test_a_graceful_stop_returns_running_jobs_without_a_failure(
    wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix, grace_period=0.2)
    started = threading.Event()

    @worker.job("q")
    async def hold(payload: str) -> None:
        started.set()
        await asyncio.sleep(30)

    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        ref = wq.submit("q", "long")
        assert started.wait(10)
    finally:
        worker.stop()
        thread.join(20)
    info = wq.get_job("q", ref.id)
    assert info is not None and (info.state, info.attempts, info.error) == ("queued", 1, None)
    assert wq.count_jobs("q")["queued"] == 1


def test_a_job_handler_refuses_a_queue_that_holds_tasks(
    wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    wq.enqueue("busy", "a task")
    worker = fast_worker(redis_url, prefix)

    @worker.job("busy")
    def handle(payload: str) -> None: ...

    with pytest.raises(worqr.WrongQueueKindError, match="'busy'"):
        worker.run()


def test_delayed_jobs_start_on_time_never_early(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    """Two workers; each delayed job starts after its due time (Redis's clock)
    and soon after it, woken by the timer holder, not by a poll."""
    outcomes = Outcomes()
    starts: dict[str, float] = {}
    for _ in range(2):
        worker = fast_worker(redis_url, prefix)
        worker.configure(poll_interval=30.0)  # only the timer can wake them in time
        worker.add_hooks(outcomes)

        @worker.job("remind")
        async def remind(payload: str) -> None:
            starts[payload] = wq.server_time()

        running.start(worker)
    now = wq.server_time()
    due = {f"r{i}": now + 0.3 + i * 0.05 for i in range(12)}
    for payload, at in due.items():
        wq.submit("remind", payload, at=at)
    wait_until(lambda: len(starts) == 12, timeout=10)
    lateness = sorted(starts[p] - due[p] for p in due)
    assert lateness[0] >= -0.002  # never early (the two reads of TIME differ by a hair)
    assert lateness[-1] < 0.5, lateness  # a pub/sub hop and a script, on a loaded CI box
    assert all(0 <= w < 0.5 for w in outcomes.waited)
