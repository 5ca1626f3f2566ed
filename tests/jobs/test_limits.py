"""Traffic control: a job queue's global rate limit and cap on active jobs, held
in the take script across every worker process, and `RateLimited` from a handler
(delayed, not a failure, the queue shut as long)."""

from __future__ import annotations

import bisect
from collections.abc import Callable

import pytest

import worqr
from tests.support.job_mesh import Mesh, mesh_fixture
from tests.support.waiting import wait_until

from .conftest import Running, fast_worker

Make = Callable[..., worqr.Worqr]


mesh = mesh_fixture("limit_app:worker")


def start_times(client: worqr.Worqr, queue: str) -> list[float]:
    """Every start time the job records of ``queue`` hold (Redis's clock), sorted."""
    starts = []
    for state in ("active", "finished"):
        cursor: str | None = None
        while True:
            page, cursor = client.get_jobs(queue, state, limit=1000, cursor=cursor)
            starts += [job.started for job in page if job.started is not None]
            if cursor is None:
                break
    return sorted(starts)


def busiest(starts: list[float], seconds: float) -> int:
    """The most starts in any window [t, t + seconds) (sorted start times)."""
    return max(bisect.bisect_left(starts, s + seconds) - i for i, s in enumerate(starts))


@pytest.mark.slow
@pytest.mark.serial
def test_a_rate_limit_holds_across_four_worker_processes(mesh: Mesh) -> None:
    """20 jobs/s for 10 s: 190 to 210 starts, never more than 20 in any second."""
    client = mesh.client
    client.configure_queue("rated", rate=(20, 1.0))
    client.submit_many("rated", [f"j{i}" for i in range(400)])
    mesh.start(4, "--concurrency", "8")
    wait_until(lambda: start_times(client, "rated"), timeout=30, message="a first start")
    first = start_times(client, "rated")[0]
    wait_until(
        lambda: start_times(client, "rated")[-1] >= first + 10.0,
        timeout=20,
        message="10 s of starts",
    )
    starts = start_times(client, "rated")
    in_ten = bisect.bisect_left(starts, first + 10.0)
    print(f"{in_ten} starts in 10 s")
    assert 190 <= in_ten <= 210, in_ten
    print(f"at most {busiest(starts, 1.0)} in a second")
    assert busiest(starts, 1.0) <= 20
    limits = client.get_limits("rated")
    assert limits.rate == (20, 1.0) and limits.max_active is None


@pytest.mark.slow
def test_max_active_is_never_exceeded_by_four_processes(mesh: Mesh, prefix: str) -> None:
    client = mesh.client
    client.configure_queue("capped", max_active=3)
    refs = client.submit_many("capped", [f"j{i}" for i in range(120)])
    mesh.start(4, "--concurrency", "8")
    for ref in refs:
        assert client.result("capped", ref.id, timeout=60) is None
    seen = [int(n) for n in mesh.redis.lrange(f"{prefix}:seen", 0, -1)]
    assert len(seen) == 120
    assert max(seen) == 3, max(seen)  # the cap, and reached: not one at a time


def test_rate_limited_delays_the_job_without_a_failure_and_shuts_the_queue(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)
    attempts: list[str] = []

    @worker.job("api")
    def call_api(payload: str) -> str:
        attempts.append(payload)
        if payload == "first" and attempts.count("first") == 1:
            raise worqr.RateLimited(1.5)
        return payload

    running.start(worker)
    first = wq.submit("api", "first")
    wait_until(lambda: wq.get_limits("api").closed_until is not None, message="the shut")
    shut = wq.get_limits("api")
    assert shut.limited and shut.closed_until is not None
    later = wq.submit("api", "later")
    assert wq.result("api", later.id, timeout=10) == "later"
    assert wq.result("api", first.id, timeout=10) == "first"
    info, after = wq.get_job("api", first.id), wq.get_job("api", later.id)
    assert info is not None and after is not None
    assert (info.attempts, info.error) == (1, None)  # its limited attempt given back
    assert after.started is not None and after.started >= shut.closed_until - 0.001
    stats = wq.get_stats("api")
    assert stats["rate_limited"] == 1 and "failed" not in stats and "retried" not in stats
    assert not wq.get_limits("api").limited


def test_limits_are_checked_before_anything_is_written(wq: worqr.Worqr) -> None:
    for bad, error in [
        ({"rate": (0, 1.0)}, ValueError),
        ({"rate": (5, 0)}, ValueError),
        ({"rate": (5,)}, TypeError),
        ({"rate": (5, 0.0009)}, ValueError),  # under a millisecond
        ({"rate": (5, 31 * 24 * 3600)}, ValueError),  # over 30 days
        ({"max_active": 0}, ValueError),
        ({"max_active": True}, TypeError),
        ({"rate": (5, 1e308)}, ValueError),
        ({"rate": (5, float("nan"))}, ValueError),
        ({"rate": (2**64, 1.0)}, ValueError),
        ({"max_active": 2, "max_recoveries": -2}, ValueError),
    ]:
        with pytest.raises(error):
            wq.configure_queue("fresh", **bad)  # type: ignore[arg-type]
    limits = wq.get_limits("fresh")
    assert (limits.rate, limits.max_active, wq.get_queues()) == (None, None, [])
    wq.enqueue("fresh", "still a task queue")  # nothing made it a job queue


def test_limits_make_a_new_queue_a_job_queue_and_refuse_a_task_queue(
    wq: worqr.Worqr,
) -> None:
    wq.configure_queue("jobs-only", max_active=2)
    with pytest.raises(worqr.WrongQueueKindError):
        wq.enqueue("jobs-only", "task")
    wq.enqueue("tasks", "t")
    with pytest.raises(worqr.WrongQueueKindError):
        wq.configure_queue("tasks", rate=(1, 1.0))
    with pytest.raises(worqr.WrongQueueKindError):
        wq.get_limits("tasks")
    assert wq.count_tasks("tasks") == 1
    wq.configure_queue("jobs-only", max_active=None, rate=(3, 2.0))
    limits = wq.get_limits("jobs-only")
    assert (limits.rate, limits.max_active, limits.limited) == ((3, 2.0), None, False)


def test_a_reopening_wakes_one_idle_worker_not_a_herd(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    """Four idle workers and a queue opening every 0.25 s: each reopening is
    one wake-up (the timer), so wake-ups stay near the starts, not four times them."""

    class Wakes(worqr.Hooks):
        def __init__(self) -> None:
            self.count = 0

        def on_wakeup(self, queue: str) -> None:
            self.count += 1

    wakes = Wakes()
    for _ in range(4):
        worker = fast_worker(redis_url, prefix, hooks=[wakes], poll_interval=30.0)
        worker.job("slow-lane")(lambda payload: payload)
        running.start(worker)
    wq.configure_queue("slow-lane", rate=(4, 1.0))
    payloads = [f"j{i}" for i in range(8)]
    refs = wq.submit_many("slow-lane", payloads)
    assert [wq.result("slow-lane", ref.id, timeout=10) for ref in refs] == payloads
    starts = start_times(wq, "slow-lane")
    assert len(starts) == 8
    assert busiest(starts, 1.0) <= 4, starts
    # The submit wakes the 4 idle workers once; after that only the timer's holder
    # hears of each reopening ('due', not counted here), or one idle worker ('work').
    assert wakes.count <= 4 + 8, wakes.count
