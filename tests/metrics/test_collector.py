"""The mesh collector reports what Redis holds, at scrape time, and never raises."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis
from prometheus_client import CollectorRegistry, generate_latest

from tests.support.metrics import scrape, value
from tests.support.timing import quiet
from worqr import Worqr
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis, free_port
from worqr.metrics.collector import STAT_EVENTS, MeshCollector


@pytest.fixture
def collector(redis_url: str, prefix: str) -> Iterator[MeshCollector]:
    made = MeshCollector.from_url(redis_url, prefix)
    yield made
    made.close()


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
        for event in STAT_EVENTS:
            exported = value(registry, "worqr_queue_events_total", queue="alpha", event=event)
            assert exported == stats.get(event, 0) == expected.get(event, 0), event
        assert value(registry, "worqr_queue_events_total", queue=odd, event="enqueued") == 2


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
