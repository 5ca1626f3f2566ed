"""The Grafana dashboard's structure: unique panel ids, every data source is the
provisioned Prometheus, every metric it names is one worqr exports, and every
per-queue query is filtered by the queue variable; and docs/metrics.md lists
every metric worqr exports."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from tests.support import ROOT
from worqr import Worqr
from worqr.metrics.collector import MeshCollector
from worqr.metrics.worker import WorkerMetrics

DASHBOARD = ROOT / "grafana" / "dashboards" / "worqr.json"
DATASOURCES = ROOT / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
METRICS_DOC = ROOT / "docs" / "metrics.md"
SELECTOR = re.compile(r"\b(worqr_[a-z_]+)\b(\{[^}]*\})?")
QUEUE_FILTER = 'queue=~"$queue"'


def load_dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def all_panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for panel in panels:
        found.append(panel)
        found += all_panels(panel.get("panels", []))  # collapsed rows nest theirs
    return found


def query_panels() -> list[dict[str, Any]]:
    return [p for p in all_panels(load_dashboard()["panels"]) if p["type"] != "row"]


def exprs() -> list[str]:
    return [target["expr"] for panel in query_panels() for target in panel["targets"]]


def provisioned_uid() -> str:
    config = yaml.safe_load(DATASOURCES.read_text())
    (source,) = config["datasources"]
    assert source["type"] == "prometheus"
    uid: str = source["uid"]
    return uid


@pytest.fixture(scope="module")
def exported(redis_url: str) -> tuple[set[str], set[str]]:
    """(every sample name worqr exports, the names that carry a queue label),
    read from the real exporters rather than kept as a list here."""
    names: set[str] = set()
    queued: set[str] = set()
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    metrics.on_wakeup("q")  # a queue seen: every per-queue series exists
    metrics.on_job_started("j", 0.0)  # a job queue's first job: its job series too
    families = list(registry.collect())
    with Worqr(redis_url, prefix="dashboard-test") as wq:
        wq.enqueue("q", "t")
        wq.submit("j", "t")
        collector = MeshCollector.from_url(redis_url, "dashboard-test")
        families += list(collector.collect())
        collector.close()
        wq.delete_queue("q")
        wq.delete_queue("j")
    for family in families:
        for sample in family.samples:
            names.add(sample.name)
            if "queue" in sample.labels:
                queued.add(sample.name)
    return names, queued


def test_panel_ids_are_unique_and_panels_fit_the_grid() -> None:
    panels = all_panels(load_dashboard()["panels"])
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] >= 1 and grid["x"] + grid["w"] <= 24, panel["title"]
        mine = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not mine & cells, f"panel {panel['title']!r} overlaps another"
        cells |= mine


def test_every_datasource_is_the_provisioned_prometheus() -> None:
    expected = {"type": "prometheus", "uid": provisioned_uid()}
    dashboard = load_dashboard()
    for panel in query_panels():
        assert panel["datasource"] == expected, panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == expected, panel["title"]
            assert target["expr"].strip(), panel["title"]
    for variable in dashboard["templating"]["list"]:
        assert variable["datasource"] == expected, variable["name"]


def test_queue_variable_lists_queues_and_allows_all() -> None:
    (variable,) = [v for v in load_dashboard()["templating"]["list"] if v["name"] == "queue"]
    assert variable["type"] == "query"
    assert "label_values(worqr_queue_tasks, queue)" in variable["query"]["query"]
    assert variable["includeAll"] and variable["multi"]
    assert variable["allValue"] == ".*"  # "All" must also match queues created later


def test_every_metric_exists_and_every_per_queue_query_uses_the_variable(
    exported: tuple[set[str], set[str]],
) -> None:
    names, queued = exported
    per_queue_panels = 0
    for panel in query_panels():
        uses_queue = False
        for target in panel["targets"]:
            for name, matchers in SELECTOR.findall(target["expr"]):
                assert name in names, f"{panel['title']!r}: worqr exports no {name}"
                if name in queued:
                    uses_queue = True
                    assert QUEUE_FILTER in matchers, (
                        f"{panel['title']!r}: {name} is not filtered by the queue variable"
                    )
        per_queue_panels += uses_queue
    assert per_queue_panels >= 10


def test_the_wall_screen_covers_what_the_team_watches() -> None:
    text = "\n".join(exprs())
    for needle in (
        'event="enqueued"',  # throughput in
        'event="finished"',  # throughput out
        "worqr_queue_tasks",  # backlog
        "worqr_queue_processes",  # in process
        "histogram_quantile(0.95",  # run time percentiles
        "worqr_task_duration_seconds_bucket",
        "failed|cancelled|recovered",  # failures, cancellations, recoveries
        "worqr_workers_alive",
        "worqr_registrations_total",  # churn
        "worqr_lease_losses_total",
        "worqr_peers_failed_total",
        "worqr_redis_errors_total",
        'result="empty"',  # thundering herd: empty dequeues per wake-up
        "worqr_notifications_total",
        "worqr_jobs{",  # jobs by state
        "worqr_job_start_delay_seconds_bucket",
        'event="retried"',  # job retries vs failures
        "worqr_job_timeouts_total",
        "worqr_jobs_overdue",
        "worqr_schedules_stalled",
        'event="cron_fired"',  # schedules
        "worqr_flow_outbox",  # flow hops waiting, and late ones
    ):
        assert needle in text, needle


def test_every_exported_metric_is_documented(exported: tuple[set[str], set[str]]) -> None:
    names, _ = exported
    documented = set(re.findall(r"^\| `(worqr_[a-z_]+)` \|", METRICS_DOC.read_text(), re.M))
    for name in names:
        base = re.sub(r"_(bucket|sum|count|created)$", "", name)
        assert {name, base, f"{base}_total"} & documented, f"docs/metrics.md lacks {name}"
