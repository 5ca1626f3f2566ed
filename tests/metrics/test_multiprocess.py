"""One endpoint for many worker processes: counters and histograms of every child
add up, a dead child's in-process gauge disappears once it is marked dead, and
its counters stay (prometheus_client multiprocess mode)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from tests.support.metrics import Snapshot, scrape
from worqr.metrics.serve import mark_dead, multiprocess_registry, serve
from worqr.metrics.worker import WorkerMetrics

# A worker process's metrics, driven through the hooks; it waits for stdin to close.
CHILD = """
import sys
from worqr.metrics.worker import worker_metrics
metrics = worker_metrics()
started, finished = int(sys.argv[1]), int(sys.argv[2])
metrics.on_registered("w")
for _ in range(started):
    metrics.on_job_started("jobs", 0.002)
    metrics.on_started("jobs")
metrics.on_job_timeout("jobs")
for _ in range(finished):
    metrics.on_finished("jobs", 0.02)
metrics.on_dequeue("jobs", 4, 0)
print("ready", flush=True)
sys.stdin.read()
"""


class Child:
    def __init__(self, directory: Path, started: int, finished: int) -> None:
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(started), str(finished)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline() == b"ready\n"

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def close(self) -> None:
        """Let the child end (its stdin closes), reap it and close its pipes."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)
        self.process.stdout.close()


@pytest.fixture
def children(tmp_path: Path) -> Iterator[list[Child]]:
    made: list[Child] = []
    yield made
    for child in made:
        child.close()


def read(directory: Path) -> Snapshot:
    """Every sample of the children's metrics files, as one endpoint serves them."""
    return scrape(multiprocess_registry(str(directory)))


JOBS = frozenset({("queue", "jobs")})


def test_children_add_up_and_a_dead_child_leaves_gauges_but_not_counters(
    tmp_path: Path, children: list[Child]
) -> None:
    first = Child(tmp_path, started=5, finished=2)  # 3 running
    second = Child(tmp_path, started=4, finished=3)  # 1 running
    children += [first, second]

    values = read(tmp_path)
    assert values[("worqr_tasks_started_total", JOBS)] == 9
    assert values[("worqr_tasks_finished_total", JOBS)] == 5
    assert values[("worqr_tasks_in_process", JOBS)] == 4
    assert values[("worqr_task_duration_seconds_count", JOBS)] == 5
    assert values[("worqr_job_start_delay_seconds_count", JOBS)] == 9
    assert values[("worqr_job_timeouts_total", JOBS)] == 2
    assert values[("worqr_registrations_total", frozenset())] == 2
    empty = frozenset({("queue", "jobs"), ("result", "empty")})
    assert values[("worqr_dequeues_total", empty)] == 2

    first.kill()  # crash: no cleanup of its own
    # Until the supervisor marks it dead, its running tasks still count: that is
    # what mark_dead is for.
    assert read(tmp_path)[("worqr_tasks_in_process", JOBS)] == 4
    mark_dead(first.pid, str(tmp_path))
    values = read(tmp_path)
    assert values[("worqr_tasks_in_process", JOBS)] == 1
    assert values[("worqr_tasks_started_total", JOBS)] == 9  # its history stays
    assert values[("worqr_task_duration_seconds_count", JOBS)] == 5
    assert values[("worqr_job_start_delay_seconds_count", JOBS)] == 9
    assert values[("worqr_job_timeouts_total", JOBS)] == 2

    replacement = Child(tmp_path, started=2, finished=0)  # the supervisor's restart
    children.append(replacement)
    values = read(tmp_path)
    assert values[("worqr_tasks_started_total", JOBS)] == 11
    assert values[("worqr_tasks_in_process", JOBS)] == 3
    assert values[("worqr_registrations_total", frozenset())] == 3


@pytest.mark.slow
def test_one_http_endpoint_serves_every_child(tmp_path: Path, children: list[Child]) -> None:
    children += [Child(tmp_path, 3, 3), Child(tmp_path, 2, 1)]
    server = serve(0, registry=multiprocess_registry(str(tmp_path)))
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=5) as r:
            text = r.read().decode()
    finally:
        server.close()
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("worqr_tasks_finished_total", JOBS)] == 4
    assert samples[("worqr_tasks_in_process", JOBS)] == 1
    le_20ms = frozenset({("queue", "jobs"), ("le", "0.025")})
    assert samples[("worqr_task_duration_seconds_bucket", le_20ms)] == 4


def test_prepare_works_even_after_prometheus_client_was_imported(tmp_path: Path) -> None:
    # A supervisor may import prometheus_client before it prepares the directory;
    # metrics it (or a forked child) creates afterwards must still go to the files.
    script = """
import os, prometheus_client
from worqr.metrics.serve import prepare_multiprocess_dir, remove_multiprocess_dir
from worqr.metrics.worker import worker_metrics
path = prepare_multiprocess_dir()
assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == path and os.listdir(path) == []
worker_metrics().on_started("q")
print(sorted(os.listdir(path)))
remove_multiprocess_dir(path)
assert not os.path.exists(path) and "PROMETHEUS_MULTIPROC_DIR" not in os.environ
"""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    files = done.stdout
    assert "counter_" in files and "gauge_livesum_" in files and "histogram_" in files


def test_mark_dead_without_multiprocess_mode_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One process, no metrics directory: a supervisor still calls mark_dead for
    # each child that exits (and may for itself); the values it serves stay.
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    registry = CollectorRegistry()
    metrics = WorkerMetrics(registry)
    metrics.on_started("jobs")
    metrics.on_started("jobs")
    metrics.on_finished("jobs", 0.02)  # one still running
    before = scrape(registry)
    assert before[("worqr_tasks_started_total", JOBS)] == 2
    assert before[("worqr_tasks_in_process", JOBS)] == 1
    assert before[("worqr_task_duration_seconds_count", JOBS)] == 1

    mark_dead(os.getpid())
    mark_dead(os.getpid() + 1)  # a child's pid
    assert scrape(registry) == before
