"""WorkerMetrics counts a real client's life events: registrations, lease losses,
peers failed and their tasks recovered, heartbeat failures, Redis outages."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import redis
from prometheus_client import CollectorRegistry

from tests.support.timing import quiet
from tests.support.waiting import wait_until
from worqr import Fail, JobFailedError, Retry, Worker, Worqr, current_job, current_process
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis
from worqr.metrics import install_worker_metrics
from worqr.metrics.worker import WorkerMetrics


def reader(registry: CollectorRegistry) -> Callable[..., float]:
    def value(name: str, **labels: str) -> float:
        found = registry.get_sample_value(name, labels)
        return 0.0 if found is None else found

    return value


def test_observer_counts_registrations_peers_recoveries_and_lease_loss(
    redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    value = reader(registry)
    mesh = MeshKeys(prefix)
    with Worqr(redis_url, settings=quiet(prefix)) as wq:
        wq.add_hooks(metrics)
        wq.start_worker()
        assert value("worqr_registrations_total") == 1

        wq.enqueue_many("jobs", ["a", "b", "c"])
        with Worqr(redis_url, settings=quiet(prefix)) as peer:
            peer_id = peer.start_worker()
            assert len(peer.dequeue_many("jobs", 2)) == 2
            redis_client.delete(mesh.alive(peer_id))  # its lease ran out
            assert wq.reap() == 1
        assert value("worqr_peers_failed_total") == 1
        assert value("worqr_tasks_recovered_total") == 2
        assert value("worqr_tasks_poisoned_total") == 0

        wq.configure_queue("jobs", max_recoveries=0)  # the next recovery is one too many
        with Worqr(redis_url, settings=quiet(prefix)) as peer:
            peer_id = peer.start_worker()
            assert peer.dequeue("jobs") is not None
            redis_client.delete(mesh.alive(peer_id))
            assert wq.reap() == 1
        assert value("worqr_peers_failed_total") == 2
        assert value("worqr_tasks_recovered_total") == 2
        assert value("worqr_tasks_poisoned_total") == 1

        # This worker's own lease is gone: it notices, counts, re-registers.
        redis_client.delete(mesh.alive(wq.worker_id or ""))
        assert wq.heartbeat() == "recovered"
        assert value("worqr_lease_losses_total") == 1
        assert value("worqr_registrations_total") == 2
        # Other clients' events are not this worker's.
        assert value("worqr_heartbeat_failures_total") == 0
        assert value("worqr_redis_errors_total") == 0


@pytest.mark.fault
@pytest.mark.slow
def test_an_outage_counts_once_and_its_end_counts_as_a_reconnect(
    fresh_redis: EmbeddedRedis, prefix: str
) -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    value = reader(registry)
    with Worqr(fresh_redis.url, prefix=prefix, ttl=3, heartbeat=0.05) as wq:
        wq.add_hooks(metrics)
        wq.start_worker()
        fresh_redis.stop()
        wait_until(lambda: value("worqr_heartbeat_failures_total") >= 3, timeout=10)
        assert value("worqr_redis_errors_total") == 1  # one outage, however many failures
        assert value("worqr_redis_reconnects_total") == 0
        fresh_redis.start()
        wait_until(lambda: value("worqr_redis_reconnects_total") == 1, timeout=10)
        assert value("worqr_redis_errors_total") == 1


def test_hooks_count_by_queue_and_the_gauge_follows_running_tasks() -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    value = reader(registry)
    metrics.on_wakeup("mail")
    # A queue seen once has every series at 0, so dashboards read 0, not "no data".
    for name in ("started", "finished", "failed", "retried", "cancelled", "fenced"):
        assert registry.get_sample_value(f"worqr_tasks_{name}_total", {"queue": "mail"}) == 0
    assert (
        registry.get_sample_value("worqr_dequeues_total", {"queue": "mail", "result": "tasks"}) == 0
    )
    for _ in range(5):
        metrics.on_started("mail")
    metrics.on_finished("mail", 0.003)
    metrics.on_failed("mail", 2.0)
    metrics.on_retried("mail")
    metrics.on_cancelled("mail")
    metrics.on_fenced("mail")
    metrics.on_dequeue("mail", 4, 0)
    metrics.on_dequeue("mail", 4, 3)
    assert value("worqr_tasks_started_total", queue="mail") == 5
    assert value("worqr_tasks_in_process", queue="mail") == 0  # each ended one way
    assert value("worqr_task_duration_seconds_count", queue="mail") == 2
    assert value("worqr_task_duration_seconds_bucket", queue="mail", le="0.005") == 1
    assert value("worqr_task_duration_seconds_bucket", queue="mail", le="2.5") == 2
    assert value("worqr_notifications_total", queue="mail") == 1
    assert value("worqr_dequeues_total", queue="mail", result="empty") == 1
    assert value("worqr_dequeues_total", queue="mail", result="tasks") == 1
    for name in ("failed", "retried", "cancelled", "fenced"):
        assert value(f"worqr_tasks_{name}_total", queue="mail") == 1


def test_a_real_worker_counts_every_outcome_and_agrees_with_redis(
    redis_url: str, prefix: str
) -> None:
    registry = CollectorRegistry()
    value = reader(registry)
    worker = Worker(redis_url, prefix=prefix, concurrency=4)
    release = threading.Event()
    hanging = threading.Event()
    retried: set[str] = set()

    @worker.handler("jobs")
    def handle(task: str) -> None:
        if task == "fail":
            raise RuntimeError("boom")
        if task == "retry" and task not in retried:
            retried.add(task)
            raise Retry()
        if task == "hang":
            hanging.set()
            current_process().cancelled.wait(10)
            return
        release.wait(10)

    metrics = install_worker_metrics(worker, WorkerMetrics(registry))
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert worker.wait_started(10)
        assert value("worqr_registrations_total") == 1
        with Worqr(redis_url, prefix=prefix) as client:
            client.enqueue_many("jobs", ["ok1", "ok2", "fail", "retry", "hang"])
            assert hanging.wait(10)
            assert value("worqr_tasks_in_process", queue="jobs") >= 1
            assert client.cancel_tasks("jobs", "hang") == 1  # the running copy
            release.set()
            wait_until(lambda: value("worqr_tasks_finished_total", queue="jobs") == 3)
            wait_until(lambda: value("worqr_tasks_cancelled_total", queue="jobs") == 1)
            stats = client.get_stats("jobs")
        assert value("worqr_tasks_in_process", queue="jobs") == 0
        assert value("worqr_tasks_started_total", queue="jobs") == 6  # retry ran twice
        assert value("worqr_tasks_failed_total", queue="jobs") == 1
        assert value("worqr_tasks_retried_total", queue="jobs") == 1
        assert value("worqr_tasks_fenced_total", queue="jobs") == 0
        assert value("worqr_task_duration_seconds_count", queue="jobs") == 4  # finished + failed
        # The worker's own counts agree with the scripts' counters in Redis.
        assert stats["finished"] == value("worqr_tasks_finished_total", queue="jobs")
        assert stats["cancelled"] == value("worqr_tasks_cancelled_total", queue="jobs")
        assert stats["failed"] == value("worqr_tasks_failed_total", queue="jobs")
        assert stats["stopped"] == value("worqr_tasks_retried_total", queue="jobs")
        assert stats["dequeued"] == value("worqr_tasks_started_total", queue="jobs")
        assert value("worqr_notifications_total", queue="jobs") >= 1
        got = value("worqr_dequeues_total", queue="jobs", result="tasks")
        assert got + value("worqr_dequeues_total", queue="jobs", result="empty") >= 1
        assert got >= 1
        assert metrics.finished is not None
    finally:
        release.set()
        worker.stop()
        thread.join(timeout=15)


def test_job_hooks_count_by_job_queue_only() -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    value = reader(registry)
    metrics.on_wakeup("mail")
    metrics.on_started("mail")
    # A task queue never gets the job series.
    assert registry.get_sample_value("worqr_job_timeouts_total", {"queue": "mail"}) is None
    assert (
        registry.get_sample_value("worqr_job_start_delay_seconds_count", {"queue": "mail"}) is None
    )
    # A job queue's first job creates them, at 0, with the queue's task series.
    metrics.on_job_started("thumbs", 0.0004)
    assert registry.get_sample_value("worqr_job_timeouts_total", {"queue": "thumbs"}) == 0
    assert registry.get_sample_value("worqr_tasks_failed_total", {"queue": "thumbs"}) == 0
    metrics.on_job_started("thumbs", 3.0)
    metrics.on_job_started("thumbs", -0.002)  # never negative: it started when due
    metrics.on_job_timeout("thumbs")
    assert value("worqr_job_start_delay_seconds_count", queue="thumbs") == 3
    assert value("worqr_job_start_delay_seconds_bucket", queue="thumbs", le="0.001") == 2
    assert value("worqr_job_start_delay_seconds_bucket", queue="thumbs", le="2.5") == 2
    assert value("worqr_job_start_delay_seconds_bucket", queue="thumbs", le="5.0") == 3
    assert value("worqr_job_start_delay_seconds_bucket", queue="thumbs", le="600.0") == 3
    assert value("worqr_job_start_delay_seconds_sum", queue="thumbs") == pytest.approx(3.0004)
    assert value("worqr_job_timeouts_total", queue="thumbs") == 1
    # A timeout first (a job queue seen only through it) creates them too.
    metrics.on_job_timeout("reports")
    assert value("worqr_job_timeouts_total", queue="reports") == 1
    assert (
        registry.get_sample_value("worqr_job_start_delay_seconds_count", {"queue": "reports"}) == 0
    )


def test_a_real_worker_counts_job_outcomes_start_delays_and_timeouts(
    redis_url: str, prefix: str
) -> None:
    registry = CollectorRegistry()
    value = reader(registry)
    worker = Worker(redis_url, prefix=prefix, concurrency=4)

    @worker.job("jobs", retries=1, backoff=0.05)
    def handle(payload: str) -> str:
        if payload == "fail":
            raise Fail("bad input")
        if payload == "flaky" and current_job().attempt == 1:
            raise ConnectionError("once")
        if payload == "slow":
            current_job().cancelled.wait(5)  # past its timeout: the attempt fails at once
        return "ok"

    install_worker_metrics(worker, WorkerMetrics(registry))
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert worker.wait_started(10)
        with Worqr(redis_url, prefix=prefix) as client:
            refs = {payload: client.submit("jobs", payload) for payload in ("now", "flaky", "fail")}
            refs["later"] = client.submit("jobs", "later", delay=0.3)
            refs["slow"] = client.submit("jobs", "slow", timeout=0.05, retries=0)
            for payload in ("now", "later", "flaky"):
                assert client.result("jobs", refs[payload].id, timeout=10) == "ok"
            for payload in ("fail", "slow"):
                with pytest.raises(JobFailedError):
                    client.result("jobs", refs[payload].id, timeout=10)
            stats = client.get_stats("jobs")
        wait_until(lambda: value("worqr_tasks_finished_total", queue="jobs") == 3)
        started = value("worqr_job_start_delay_seconds_count", queue="jobs")
        assert started == 6 == stats["started"] == value("worqr_tasks_started_total", queue="jobs")
        # Each started soon after it was due (the delayed one and the retry too).
        assert value("worqr_job_start_delay_seconds_bucket", queue="jobs", le="2.5") == 6
        assert value("worqr_job_timeouts_total", queue="jobs") == 1
        # A failure retried after its backoff, and two failed for good (Fail, the timeout).
        assert value("worqr_tasks_retried_total", queue="jobs") == 1 == stats["retried"]
        assert value("worqr_tasks_failed_total", queue="jobs") == 2 == stats["failed"]
        assert stats["finished"] == 3
    finally:
        worker.stop()
        thread.join(timeout=15)
