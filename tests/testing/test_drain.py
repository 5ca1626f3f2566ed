"""`worqr.testing.drain`: a worker's handlers run in the test's process until
its queues have run dry, and the report says what happened."""

from __future__ import annotations

import asyncio
import time

import pytest

import worqr
from tests.support.workers import worker_settings
from worqr.testing import DrainTimeoutError, drain, drain_async


def new_worker(redis_url: str, prefix: str) -> worqr.Worker:
    return worqr.Worker(redis_url, settings=worker_settings(prefix))


def test_the_report_names_finished_failed_and_retried_jobs(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    worker = new_worker(redis_url, prefix)

    @worker.job("orders", retries=1, backoff=0.0)
    def order(payload: str) -> str:
        if payload == "bad":
            raise worqr.Fail("no such product")
        if payload == "flaky" and worqr.current_job().attempt == 1:
            raise ConnectionError("payment service away")
        return payload.upper()

    ok, flaky, bad = (wq.submit("orders", p) for p in ("ok", "flaky", "bad"))
    report = drain(worker)
    assert sorted(report.finished) == sorted([ok.id, flaky.id])
    assert report.failed == [bad.id] and report.retried == [flaky.id]
    assert report.attempts(flaky.id) == 2 and report.attempts(ok.id) == 1
    assert isinstance(report.errors[bad.id], worqr.Fail)
    assert isinstance(report.errors[flaky.id], ConnectionError)  # its last error
    assert report.left_for_later == 0 and report.cancelled == []
    assert wq.result("orders", flaky.id) == "FLAKY"
    assert wq.get_workers() == []  # the worker stopped after the drain


@pytest.mark.serial  # a deadline
def test_skip_delays_runs_three_backed_off_retries_in_well_under_a_second(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    worker = new_worker(redis_url, prefix)

    @worker.job("mail", retries=3, backoff=worqr.Backoff(base=10, factor=2))
    def mail(payload: str) -> str:
        if payload == "hi" and worqr.current_job().attempt <= 3:
            raise ConnectionError("smtp down")
        return "sent"

    ref = wq.submit("mail", "hi")
    reminder = wq.submit("mail", "later", delay=3600)
    began = time.monotonic()
    report = drain(worker, skip_delays=True)
    took = time.monotonic() - began
    assert report.attempts(ref.id) == 4 and ref.id in report.finished
    assert report.retried == [ref.id] and reminder.id in report.finished
    assert took < 1.0, took  # issue 31's target: 10 + 20 + 40 s of backoff skipped
    assert wq.result("mail", ref.id) == "sent"


def test_without_skip_delays_what_is_not_due_is_left_for_later(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    worker = new_worker(redis_url, prefix)

    @worker.job("mail", retries=1, backoff=worqr.Backoff(base=60, jitter=0))
    def mail(payload: str) -> str:
        raise ConnectionError("smtp down")

    ref = wq.submit("mail", "hi")
    wq.submit("mail", "later", delay=3600)
    report = drain(worker)
    assert report.retried == [ref.id] and report.finished == []
    assert report.left_for_later == 2
    counts = wq.count_jobs("mail")
    assert (counts["retrying"], counts["delayed"]) == (1, 1)


def test_a_worker_drains_again_and_only_the_named_queues_keep_it_running(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    worker = new_worker(redis_url, prefix)
    worker.job("a")(lambda payload: payload)
    worker.handler("tasks")(lambda task: None)
    first = wq.submit("a", "1")
    wq.enqueue_many("tasks", ["x", "y"])
    report = drain(worker)
    assert report.finished == [first.id] and report.tasks["tasks"]["finished"] == 2
    second = wq.submit("a", "2")
    assert drain(worker, queues=["a"]).finished == [second.id]


def test_a_drain_that_times_out_says_what_is_left(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    worker = new_worker(redis_url, prefix)
    worker.configure(grace_period=0.1)

    @worker.job("stuck")
    async def stuck(payload: str) -> None:
        await asyncio.sleep(60)

    wq.submit_many("stuck", ["1", "2"])
    worker.configure(concurrency=1)
    with pytest.raises(DrainTimeoutError, match=r"after 0.5 s; left: 'stuck': 1 queued, 1 active"):
        drain(worker, timeout=0.5)
    assert wq.get_workers() == []


def test_drain_async_runs_on_the_test_s_loop(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    worker = new_worker(redis_url, prefix)
    worker.job("a")(lambda payload: payload)
    ref = wq.submit("a", "1")

    async def main() -> None:
        with pytest.raises(RuntimeError, match="await drain_async"):
            drain(worker)
        report = await drain_async(worker)
        assert report.finished == [ref.id]

    asyncio.run(main())


def test_bad_drain_arguments_are_refused(redis_url: str, prefix: str) -> None:
    worker = new_worker(redis_url, prefix)
    worker.job("a")(lambda payload: payload)
    worker.handler("feeds", persistent=True)(lambda task: None)
    with pytest.raises(ValueError, match=r"not served: \['b'\]"):
        drain(worker, queues=["a", "b"])
    with pytest.raises(TypeError, match="not one str"):
        drain(worker, queues="a")
    with pytest.raises(ValueError, match="persistent handlers"):
        drain(worker, queues=["feeds"])
    with pytest.raises(ValueError, match="timeout must be"):
        drain(worker, queues=["a"], timeout=0)
    with pytest.raises(TypeError, match=r"worqr\.Worker"):
        drain("worker")  # type: ignore[arg-type]
