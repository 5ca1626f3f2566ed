"""The exporter's fair-share group gauges, per job queue (never per group):
``worqr_queue_groups_waiting`` (groups with queued jobs) and
``worqr_queue_groups_limited`` (of those, the ones their own limits hold back
now), read from real Redis by the collector and by a `worqr exporter` process."""

from __future__ import annotations

import signal

from prometheus_client import CollectorRegistry, generate_latest

from tests.support.cli import start_cli
from tests.support.metrics import scrape, scrape_metrics, value
from tests.support.processes import stop
from tests.support.timing import quiet
from tests.support.waiting import wait_until
from worqr import Worqr
from worqr.embedded import free_port
from worqr.metrics.collector import MeshCollector

PAGE = 1000  # more groups than one HSCAN page of the walk the gauges once were

WAITING = "worqr_queue_groups_waiting"
LIMITED = "worqr_queue_groups_limited"


def test_groups_waiting_and_limited_follow_caps_rates_and_pauses(
    redis_url: str, prefix: str, collector: MeshCollector
) -> None:
    with (
        Worqr(redis_url, settings=quiet(prefix)) as producer,
        Worqr(redis_url, settings=quiet(prefix)) as worker,
    ):
        worker.start_worker()
        producer.configure_group("api", "capped", max_active=1)
        producer.configure_group("api", "slow", rate=(1, 60.0))
        for group in ("capped", "capped", "slow", "slow", "free", "held"):
            producer.submit("api", "x", group=group)
        producer.submit_many("api", ["u1", "u2"])  # ungrouped: no group of their own
        producer.pause("api", group="held")
        producer.submit("plain", "x")  # a job queue without groups
        snapshot = scrape(collector)
        assert value(snapshot, WAITING, queue="api") == 4  # capped, slow, free, held
        assert value(snapshot, LIMITED, queue="api") == 0  # none held back by a limit yet
        assert value(snapshot, WAITING, queue="plain") == 0  # no groups
        assert value(snapshot, LIMITED, queue="plain") == 0
        _, taken, _ = worker.internals.take_jobs("api", [], 10)
        group_of = {p.job_id: producer.get_job("api", p.job_id) for p in taken}
        started = {info.group for info in group_of.values() if info is not None}
        assert started == {"capped", "slow", "free", None}  # one each; held is paused
        snapshot = scrape(collector)
        assert value(snapshot, WAITING, queue="api") == 3  # capped, slow and held still queue one
        assert value(snapshot, LIMITED, queue="api") == 2  # capped at its cap, slow by its rate
        [capped] = [p for p in taken if getattr(group_of[p.job_id], "group", None) == "capped"]
        worker.internals.take_jobs("api", [(capped, "n", b"")], 0)  # its active job ends
        assert value(scrape(collector), LIMITED, queue="api") == 1  # slow alone
        producer.resume("api", group="held")
        producer.cancel_jobs("api")
        snapshot = scrape(collector)
        assert value(snapshot, WAITING, queue="api") == value(snapshot, LIMITED, queue="api") == 0


def test_every_page_of_groups_is_counted(
    redis_url: str, prefix: str, collector: MeshCollector
) -> None:
    groups = 2 * PAGE + 500
    with Worqr(redis_url, settings=quiet(prefix)) as producer:
        for i in range(groups):
            producer.submit("many", "x", group=f"tenant-{i}")
        producer.configure_queue("many", group_max_active=1)
        snapshot = scrape(collector)
    assert value(snapshot, WAITING, queue="many") == groups
    assert value(snapshot, LIMITED, queue="many") == 0


def test_no_label_names_a_group(redis_url: str, prefix: str, collector: MeshCollector) -> None:
    with Worqr(redis_url, settings=quiet(prefix)) as producer:
        producer.submit("api", "x", group="tenant-secret-42")
        registry = CollectorRegistry()
        registry.register(collector)
        text = generate_latest(registry).decode()
    assert "tenant-secret-42" not in text
    assert f'{WAITING}{{queue="api"}} 1.0' in text


def test_the_exporter_process_serves_the_group_gauges(redis_url: str, prefix: str) -> None:
    with Worqr(redis_url, settings=quiet(prefix)) as producer:
        producer.configure_queue("api", group_max_active=1)
        for group in ("a", "b", "c"):
            producer.submit("api", "x", group=group)
    port = free_port()
    process = start_cli("exporter", "--url", redis_url, "--prefix", prefix, "--port", str(port))
    try:
        text = wait_until(lambda: scrape_metrics(port), timeout=10, message="exporter not serving")
        assert f'{WAITING}{{queue="api"}} 3.0' in text
        assert f'{LIMITED}{{queue="api"}} 0.0' in text
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        stop(process)
