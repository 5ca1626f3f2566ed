"""Burst mode: `Worker.run(burst=True, burst_wait=...)` and `worqr worker --burst`
serve until the queues have run dry (nothing queued, nothing active, nothing
delayed or retrying due within the wait), then deregister and exit 0, saying
how many jobs were left for later."""

from __future__ import annotations

import logging
import math
import threading
import time
from pathlib import Path

import pytest

import worqr
from tests.support.cli import assert_one_line_error, cli_env, run_cli
from tests.support.waiting import wait_until
from tests.support.workers import worker_settings

HERE = Path(__file__).resolve().parent  # burst_app.py's folder


def new_worker(redis_url: str, prefix: str) -> worqr.Worker:
    return worqr.Worker(redis_url, settings=worker_settings(prefix, concurrency=4))


@pytest.mark.serial  # a deadline: it does not wait out the wait
def test_a_burst_serves_what_is_due_within_the_wait_and_leaves_the_rest(
    redis_url: str, prefix: str, wq: worqr.Worqr, caplog: pytest.LogCaptureFixture
) -> None:
    worker = new_worker(redis_url, prefix)
    ran: list[str] = []

    @worker.job("jobs")
    def job(payload: str) -> str:
        ran.append(payload)
        return payload

    @worker.handler("tasks")
    def task(payload: str) -> None:
        ran.append(payload)

    wq.submit_many("jobs", [f"j{i}" for i in range(10)])
    wq.enqueue_many("tasks", [f"t{i}" for i in range(5)])
    wq.submit("jobs", "soon", delay=0.5)
    wq.submit("jobs", "later", delay=60)
    caplog.set_level(logging.INFO, logger="worqr.worker")
    began = time.monotonic()
    worker.run(burst=True, burst_wait=3)
    took = time.monotonic() - began

    assert sorted(ran) == sorted(
        [f"j{i}" for i in range(10)] + [f"t{i}" for i in range(5)] + ["soon"]
    )
    assert took < 3, took  # it did not wait out the wait once the queues were dry
    assert worker.burst_left == 1
    assert "1 job left for later" in caplog.text
    assert wq.get_workers() == []  # deregistered
    counts = wq.count_jobs("jobs")
    assert (counts["finished"], counts["delayed"], counts["queued"]) == (11, 1, 0)
    assert wq.count_tasks("tasks") == 0


def test_a_burst_waits_for_a_retry_due_within_the_wait(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    worker = new_worker(redis_url, prefix)
    runs: list[int] = []

    @worker.job("flaky", retries=2, backoff=worqr.Backoff(base=0.2, jitter=0))
    def flaky(payload: str) -> str:
        runs.append(worqr.current_job().attempt)
        if len(runs) < 3:
            raise RuntimeError("not yet")
        return "ok"

    ref = wq.submit("flaky", "x")
    worker.run(burst=True, burst_wait=2)
    assert runs == [1, 2, 3]
    assert wq.result("flaky", ref.id) == "ok"
    assert worker.burst_left == 0


def test_a_burst_leaves_a_retry_due_after_the_wait(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    worker = new_worker(redis_url, prefix)

    @worker.job("slow-retry", retries=1, backoff=worqr.Backoff(base=60, jitter=0))
    def fails(payload: str) -> str:
        raise RuntimeError("down")

    wq.submit("slow-retry", "x")
    began = time.monotonic()
    worker.run(burst=True, burst_wait=0.5)
    assert time.monotonic() - began < 5
    assert worker.burst_left == 1
    assert wq.count_jobs("slow-retry")["retrying"] == 1


def test_a_paused_queue_s_jobs_are_left_for_later(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    worker = new_worker(redis_url, prefix)
    worker.job("paused")(lambda payload: payload)
    wq.submit_many("paused", ["a", "b"])
    wq.pause("paused")
    worker.run(burst=True, burst_wait=0)
    assert worker.burst_left == 2
    assert wq.count_jobs("paused")["queued"] == 2


def test_bursting_workers_that_share_a_queue_end_together(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    workers = [new_worker(redis_url, prefix) for _ in range(2)]
    by: list[list[str]] = [[], []]
    both_started = threading.Event()  # handlers hold their jobs until both workers run
    for index, worker in enumerate(workers):

        def handle(payload: str, index: int = index) -> None:
            assert both_started.wait(10)
            by[index].append(payload)

        worker.job("shared")(handle)
    wq.submit_many("shared", [str(i) for i in range(60)])
    threads = [
        threading.Thread(target=w.run, kwargs={"burst": True, "burst_wait": 0}) for w in workers
    ]
    for thread in threads:
        thread.start()
    assert all(worker.wait_started(10) for worker in workers)
    wait_until(lambda: all(worker.in_flight for worker in workers), message="both took work")
    both_started.set()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    assert sorted(by[0] + by[1], key=int) == [str(i) for i in range(60)]
    assert wq.count_jobs("shared")["finished"] == 60
    assert wq.get_workers() == []


@pytest.mark.parametrize(
    ("options", "error", "fragment"),
    [
        ({"burst": True, "burst_wait": -1}, ValueError, "burst_wait must be"),
        ({"burst": True, "burst_wait": math.nan}, ValueError, "burst_wait must be"),
        ({"burst": True, "burst_wait": "5"}, TypeError, "burst_wait must be a number"),
        ({"burst": 1}, TypeError, "burst must be a bool"),
    ],
)
def test_bad_burst_arguments_are_refused_before_anything_runs(
    redis_url: str,
    prefix: str,
    wq: worqr.Worqr,
    options: dict[str, object],
    error: type[Exception],
    fragment: str,
) -> None:
    worker = new_worker(redis_url, prefix)
    worker.job("q")(lambda payload: payload)
    with pytest.raises(error, match=fragment):
        worker.run(**options)  # type: ignore[arg-type]
    assert wq.get_workers() == []


def test_burst_mode_refuses_persistent_handlers(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    worker = new_worker(redis_url, prefix)
    worker.handler("feeds", persistent=True)(lambda task: None)
    with pytest.raises(ValueError, match=r"persistent handlers \(queues \['feeds'\]\)"):
        worker.run(burst=True)
    assert wq.get_workers() == []


# -- the command line ---------------------------------------------------------------------


def burst_cli(redis_url: str, prefix: str, *options: str) -> tuple[int, str]:
    result = run_cli(
        "worker",
        "burst_app:worker",
        *("--url", redis_url, "--prefix", prefix, "--ttl", "1", "--heartbeat", "0.2"),
        *options,
        env=cli_env(PYTHONPATH=str(HERE)),
    )
    return result.returncode, result.stderr


def test_worker_burst_exits_0_once_the_queues_ran_dry(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    wq.submit_many("burst", [f"j{i}" for i in range(20)])
    wq.enqueue_many("burst-tasks", [f"t{i}" for i in range(5)])
    wq.submit("burst", "soon", delay=0.3)
    wq.submit("burst", "later", delay=60)
    code, stderr = burst_cli(redis_url, prefix, "--burst", "--burst-wait", "2")
    assert code == 0, stderr
    assert "1 job left for later" in stderr, stderr
    counts = wq.count_jobs("burst")
    assert (counts["finished"], counts["delayed"]) == (21, 1)
    assert wq.count_tasks("burst-tasks") == 0
    assert wq.get_workers() == []


@pytest.mark.slow
def test_every_process_bursts_and_the_supervisor_exits_0(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    wq.submit_many("burst", [f"j{i}" for i in range(50)])
    code, stderr = burst_cli(redis_url, prefix, "--burst", "--processes", "2")
    assert code == 0, stderr
    assert stderr.count("finished its burst") == 2, stderr
    assert wq.count_jobs("burst")["finished"] == 50
    assert wq.get_workers() == []


def test_burst_wait_needs_burst_and_a_wait_of_zero_or_more(redis_url: str, prefix: str) -> None:
    result = run_cli(
        "worker", "burst_app:worker", "--url", redis_url, "--burst-wait", "1",
        env=cli_env(PYTHONPATH=str(HERE)),
    )  # fmt: skip
    assert_one_line_error(result, 2, "--burst-wait needs --burst")
    result = run_cli(
        "worker", "burst_app:worker", "--url", redis_url, "--burst", "--burst-wait", "-1",
        env=cli_env(PYTHONPATH=str(HERE)),
    )  # fmt: skip
    assert_one_line_error(result, 2, "--burst-wait")


def test_a_burst_of_persistent_handlers_is_a_usage_error(redis_url: str, prefix: str) -> None:
    result = run_cli(
        "worker", "burst_app:persistent_worker", "--url", redis_url, "--prefix", prefix, "--burst",
        env=cli_env(PYTHONPATH=str(HERE)),
    )  # fmt: skip
    assert_one_line_error(result, 2, "burst mode cannot serve persistent handlers")
