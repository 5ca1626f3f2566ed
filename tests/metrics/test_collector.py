"""The mesh collector reports what Redis holds, at scrape time, and never raises."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis
from prometheus_client import CollectorRegistry, generate_latest

from tests.support.metrics import Snapshot, scrape, value
from tests.support.timing import quiet
from tests.support.waiting import wait_until
from worqr import Dedup, Worqr
from worqr._jobs import STATES, JobProcess
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis, free_port
from worqr.metrics.collector import JOB_EVENTS, STAT_EVENTS, TASK_EVENTS, MeshCollector


def test_collector_reports_queues_workers_and_lifetime_events(
    redis_url: str, prefix: str, redis_client: redis.Redis, collector: MeshCollector
) -> None:
    odd = "orders: ünïcode ✓"  # names are data, including in labels
    with (
        Worqr(redis_url, settings=quiet(prefix)) as wq,
        Worqr(redis_url, settings=quiet(prefix)) as peer,
    ):
        wq.enqueue_many("alpha", [f"a{i}" for i in range(6)])
        wq.enqueue_many(odd, ["x", "y"])
        wq.start_worker()
        peer_id = peer.start_worker()
        peer.start_work("alpha")
        first, second, third = wq.dequeue_many("alpha", 3)
        assert wq.finish_process(first)
        assert wq.fail_process(second)  # dead letter
        assert wq.stop_process(third)  # back to the front
        assert wq.cancel_tasks("alpha", "a5") == 1
        held = peer.dequeue("alpha")
        assert held is not None
        # The peer's lease ends (as when its TTL runs out); a reaper fails it.
        redis_client.delete(MeshKeys(prefix).alive(peer_id))

        registry = scrape(collector)
        assert value(registry, "worqr_collector_up") == 1
        assert value(registry, "worqr_workers_registered") == 2
        assert value(registry, "worqr_workers_alive") == 1
        assert value(registry, "worqr_queues") == 2
        assert value(registry, "worqr_queue_tasks", queue="alpha") == 2  # a3 a4; a2 taken again
        assert value(registry, "worqr_queue_processes", queue="alpha") == 1
        assert value(registry, "worqr_queue_failed", queue="alpha") == 1
        assert value(registry, "worqr_queue_workers", queue="alpha") == 2
        assert value(registry, "worqr_queue_tasks", queue=odd) == 2
        assert value(registry, "worqr_queue_processes", queue=odd) == 0

        assert wq.reap() == 1
        registry = scrape(collector)
        assert value(registry, "worqr_workers_registered") == 1
        assert value(registry, "worqr_queue_tasks", queue="alpha") == 3
        assert value(registry, "worqr_queue_processes", queue="alpha") == 0

        # The counters are the scripts' own, event by event.
        expected = {
            "enqueued": 6,
            "dequeued": 4,
            "finished": 1,
            "failed": 1,
            "stopped": 1,
            "cancelled": 1,
            "recovered": 1,
        }
        stats = wq.get_stats("alpha")
        for event in TASK_EVENTS:
            exported = value(registry, "worqr_queue_events_total", queue="alpha", event=event)
            assert exported == stats.get(event, 0) == expected.get(event, 0), event
        # A task queue carries no job series, nor events only jobs have.
        for event in set(STAT_EVENTS) - set(TASK_EVENTS):
            assert value(registry, "worqr_queue_events_total", queue="alpha", event=event) is None
        assert not [name for name, _ in registry if name.startswith("worqr_jobs")]
        assert value(registry, "worqr_queue_events_total", queue=odd, event="enqueued") == 2


def exported_jobs(snapshot: Snapshot, queue: str) -> dict[str, float | None]:
    return {state: value(snapshot, "worqr_jobs", queue=queue, state=state) for state in STATES}


@pytest.mark.slow
def test_collector_counts_deduplicated_submits_by_mode(
    redis_url: str, prefix: str, collector: MeshCollector
) -> None:
    with Worqr(redis_url, settings=quiet(prefix)) as producer:
        producer.submit("j", "first", id="plain")
        producer.submit("j", "again", id="plain")  # a live id: deduplicated, no mode
        for mode, ttl, times in (
            ("throttle", 60.0, 3),
            ("debounce", None, 2),
            ("keep_last", None, 1),
        ):
            for i in range(times + 1):  # the first creates the key's job
                producer.submit("j", str(i), dedup=Dedup(mode, ttl=ttl, mode=mode))  # type: ignore[arg-type]
        snapshot = scrape(collector)
        for mode, times in (("throttle", 3), ("debounce", 2), ("keep_last", 1)):
            assert value(snapshot, "worqr_jobs_deduplicated_total", queue="j", mode=mode) == times
        assert value(snapshot, "worqr_queue_events_total", queue="j", event="deduplicated") == 7


def test_collector_reports_exact_job_counts_overdue_jobs_and_job_events(
    redis_url: str, prefix: str, redis_client: redis.Redis, collector: MeshCollector
) -> None:
    keys = MeshKeys(prefix).queue("j")
    with (
        Worqr(redis_url, settings=quiet(prefix)) as producer,
        Worqr(redis_url, settings=quiet(prefix)) as worker,
    ):
        worker.start_worker()
        finished = producer.submit("j", "fin", result_ttl=1.5)  # expires 1.5 s after it ends
        for payload in ("retry", "fail", "run"):
            producer.submit("j", payload)
        _, taken, _ = worker.internals.take_jobs("j", [], 4)
        by_payload: dict[object, JobProcess] = {job.task: job for job in taken}
        flags, _, _ = worker.internals.take_jobs("j", [(by_payload["fin"], "s", b"ok")], 0)
        assert flags == [True]
        retry = by_payload["retry"]
        assert worker.internals.fail_job(retry, mode="error", delay=60, retries=1, error="E") == (
            True,
            "r",
        )
        assert worker.internals.fail_job(
            by_payload["fail"], mode="fail", delay=0, retries=1, error="F"
        ) == (
            True,
            "x",
        )
        # Queued: two in the ready list (one of three left: two cancelled leave
        # tombstones there) and one with a priority (not in the list at all).
        for payload in ("q1", "q2", "q3"):
            producer.submit("j", payload, id=payload)
        producer.submit("j", "urgent", priority=5)
        assert producer.cancel_job("j", "q2") and producer.cancel_job("j", "q3")
        producer.submit("j", "later 1", delay=60)
        producer.submit("j", "later 2", delay=60)
        soon = producer.submit("j", "soon", delay=0.05)
        due = producer.get_job("j", soon.id).due  # type: ignore[union-attr]
        assert due is not None
        wait_until(lambda: producer.server_time() > due)  # due, and no take promotes it

        snapshot = scrape(collector)
        expected = {
            "delayed": 3,
            "queued": 2,
            "active": 1,
            "retrying": 1,
            "finished": 1,
            "failed": 1,
            "cancelled": 2,
        }
        assert exported_jobs(snapshot, "j") == expected == producer.count_jobs("j")
        assert value(snapshot, "worqr_jobs_overdue", queue="j") == 1
        assert redis_client.llen(keys.tasks) == 3  # what worqr_queue_tasks is not, here
        assert value(snapshot, "worqr_queue_tasks", queue="j") == 2
        assert value(snapshot, "worqr_queue_processes", queue="j") == 1
        assert value(snapshot, "worqr_queue_failed", queue="j") == 1 == producer.count_failed("j")
        stats = producer.get_stats("j")
        assert (stats["submitted"], stats["started"], stats["retried"]) == (11, 4, 1)
        for event in JOB_EVENTS:
            exported = value(snapshot, "worqr_queue_events_total", queue="j", event=event)
            assert exported == stats.get(event, 0), event
        for event in set(STAT_EVENTS) - set(JOB_EVENTS):  # enqueued, dequeued, dead_lettered
            assert value(snapshot, "worqr_queue_events_total", queue="j", event=event) is None

        # The finished job's purge time passes: it counts as gone at once, though
        # no take has purged its record yet.
        wait_until(lambda: value(scrape(collector), "worqr_jobs", queue="j", state="finished") == 0)
        assert producer.get_job("j", finished.id) is None
        assert redis_client.zcard(keys.job_finished) == 1  # still there
        # A job queue missing from the mesh's registry of job queues still counts
        # (its kind marker decides, one more round trip).
        redis_client.srem(MeshKeys(prefix).jobqueues, "j")
        _, [first], _ = worker.internals.take_jobs("j", [], 1)
        assert first.task == "urgent"
        assert not redis_client.sismember(MeshKeys(prefix).jobqueues, "j")
        snapshot = scrape(collector)
        assert exported_jobs(snapshot, "j") == {
            **expected,
            "delayed": 2,  # the take promoted the due one
            "queued": 2,
            "active": 2,
            "finished": 0,
        }
        assert value(snapshot, "worqr_jobs_overdue", queue="j") == 0
        assert value(snapshot, "worqr_collector_up") == 1


def test_job_counts_survive_a_flushed_script_cache(
    make_redis: Callable[..., EmbeddedRedis], prefix: str
) -> None:
    server = make_redis()
    collector = MeshCollector.from_url(server.url, prefix)
    try:
        with Worqr(server.url, settings=quiet(prefix)) as producer:
            producer.submit("j", "a")
            assert value(scrape(collector), "worqr_jobs", queue="j", state="queued") == 1
            collector.redis.script_flush()  # as after a restart or a failover
            producer.submit("j", "b")
            snapshot = scrape(collector)
            assert value(snapshot, "worqr_jobs", queue="j", state="queued") == 2
            assert value(snapshot, "worqr_collector_up") == 1
            assert value(snapshot, "worqr_collector_errors_total") == 0
    finally:
        collector.close()


def test_no_label_carries_a_payload_or_an_id(
    redis_url: str, prefix: str, collector: MeshCollector
) -> None:
    with Worqr(redis_url, settings=quiet(prefix)) as wq:
        worker = wq.start_worker()
        wq.enqueue("beta", "secret-payload-123")
        process = wq.dequeue("beta")
        assert process is not None
        registry = CollectorRegistry()
        registry.register(collector)
        text = generate_latest(registry).decode()
    for forbidden in ("secret-payload-123", worker, process.id):
        assert forbidden not in text


def test_queue_count_is_bounded(redis_url: str, prefix: str) -> None:
    with Worqr(redis_url, settings=quiet(prefix)) as wq:
        for name in ("q1", "q2", "q3"):
            wq.enqueue(name, "t")
    client = redis.Redis.from_url(redis_url)
    try:
        registry = scrape(MeshCollector(client, prefix, max_queues=2))
    finally:
        client.close()
    assert value(registry, "worqr_queues") == 3
    shown = [q for q in ("q1", "q2", "q3") if value(registry, "worqr_queue_tasks", queue=q)]
    assert shown == ["q1", "q2"]


def test_scrape_with_redis_down_reports_instead_of_raising(prefix: str) -> None:
    collector = MeshCollector.from_url(f"redis://127.0.0.1:{free_port()}/0", prefix, timeout=0.5)
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()  # must not raise
    assert "worqr_queue_tasks" not in text
    assert "worqr_collector_up 0.0" in text
    assert "worqr_collector_errors_total 1.0" in text
    snapshot = scrape(collector)
    assert value(snapshot, "worqr_collector_up") == 0
    assert value(snapshot, "worqr_collector_errors_total") == 2
    collector.close()


@pytest.mark.fault
def test_scrape_recovers_when_redis_comes_back(
    make_redis: Callable[..., EmbeddedRedis], prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = make_redis()
    collector = MeshCollector.from_url(server.url, prefix, timeout=0.5)
    assert value(scrape(collector), "worqr_collector_up") == 1
    server.stop()
    assert value(scrape(collector), "worqr_collector_up") == 0
    assert value(scrape(collector), "worqr_collector_up") == 0
    server.start()
    snapshot = scrape(collector)
    assert value(snapshot, "worqr_collector_up") == 1
    assert value(snapshot, "worqr_collector_errors_total") == 2
    collector.close()
    # One line when the outage starts and one when it ends, not one per scrape.
    logged = [r.getMessage() for r in caplog.records if r.name == "worqr.metrics"]
    assert len(logged) == 2, logged


def test_the_rate_limited_gauge_is_one_while_limits_hold_back_ready_jobs(
    redis_url: str, prefix: str, collector: MeshCollector
) -> None:
    with (
        Worqr(redis_url, settings=quiet(prefix)) as producer,
        Worqr(redis_url, settings=quiet(prefix)) as worker,
    ):
        worker.start_worker()
        producer.configure_queue("capped", max_active=1)
        producer.configure_queue("idle-limit", rate=(1, 60.0))
        producer.submit("idle-limit", "only")
        _, [_started], _ = worker.internals.take_jobs("idle-limit", [], 1)  # shut 60 s, none waits
        producer.submit("free", "x")  # no limits
        producer.submit_many("capped", ["a", "b"])
        _, taken, _ = worker.internals.take_jobs("capped", [], 2)
        assert len(taken) == 1  # the cap
        assert producer.get_limits("idle-limit").closed_until is not None
        registry = scrape(collector)
        assert value(registry, "worqr_queue_rate_limited", queue="capped") == 1
        assert value(registry, "worqr_queue_rate_limited", queue="idle-limit") == 0
        assert value(registry, "worqr_queue_rate_limited", queue="free") == 0
        worker.internals.take_jobs("capped", [(taken[0], "n", b"")], 0)  # the active job ends
        assert value(scrape(collector), "worqr_queue_rate_limited", queue="capped") == 0


def test_the_paused_gauge_is_one_while_a_job_queue_is_paused(
    redis_url: str, prefix: str, collector: MeshCollector
) -> None:
    with Worqr(redis_url, settings=quiet(prefix)) as producer:
        producer.submit("held", "x")
        producer.submit("free", "x")
        producer.pause("held")
        registry = scrape(collector)
        assert value(registry, "worqr_queue_paused", queue="held") == 1
        assert value(registry, "worqr_queue_paused", queue="free") == 0
        assert value(registry, "worqr_queue_rate_limited", queue="held") == 0  # not a limit
        producer.resume("held")
        assert value(scrape(collector), "worqr_queue_paused", queue="held") == 0
