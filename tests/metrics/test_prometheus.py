"""Every query of every dashboard panel returns data from a real Prometheus that
scrapes a real running mesh: worker processes behind one multiprocess endpoint,
the standalone exporter, a producer of tasks and jobs (delayed, retried, failed,
timed out, cancelled), a cancel, failures and a SIGKILLed worker.

Grafana cannot run here; Prometheus evaluates exactly the expressions Grafana
would send, with its variables substituted the way Grafana substitutes them.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from tests.support import ROOT
from tests.support.waiting import wait_until
from worqr import Step, Worqr
from worqr.embedded import free_port
from worqr.metrics.serve import MetricsServer, mark_dead, multiprocess_registry, serve

DASHBOARD = ROOT / "grafana" / "dashboards" / "worqr.json"
PROMETHEUS = shutil.which("prometheus")
TASK_QUEUES = ("alpha", "beta")
JOB_QUEUE = "gamma"
QUEUES = (*TASK_QUEUES, JOB_QUEUE)
RATE_WINDOW = "15s"  # what Grafana's $__rate_interval becomes for a 1 s scrape interval

pytestmark = [pytest.mark.prometheus, pytest.mark.slow, pytest.mark.needs("prometheus")]

# One worker process: a worqr Worker running sleepy handlers (tasks, and jobs of
# one job queue), counted by the metrics package, writing to the shared
# multiprocess directory.
WORKER = """
import sys, time
import worqr
from worqr.metrics import install_worker_metrics

url, prefix = sys.argv[1], sys.argv[2]
worker = worqr.Worker(url, prefix=prefix, concurrency=4)
worker.configure(ttl=1.0, heartbeat=0.2, grace_period=1.0)
retried = set()

def handle(task: str) -> None:
    name, _, millis = task.partition(":")
    time.sleep(int(millis) / 1000)
    if name.startswith("fail"):
        raise RuntimeError("this task fails")
    if name.startswith("retry") and name not in retried:
        retried.add(name)
        raise worqr.Retry()

for queue in ("alpha", "beta"):
    worker.handler(queue)(handle)

@worker.job("gamma", retries=1, backoff=0.05)
def job(payload: str) -> str:
    name, _, millis = payload.partition(":")
    time.sleep(int(millis or 0) / 1000)  # a chain's second step gets the first's result
    if name.startswith("fail"):
        raise worqr.Fail("this job fails")
    if name.startswith("retry") and worqr.current_job().attempt == 1:
        raise RuntimeError("this attempt fails; the next one succeeds")
    if name.startswith("slow"):
        worqr.current_job().cancelled.wait(5)  # set when it runs past its timeout
    return name

worker.cron("gamma", "beat", every=0.5, payload="beat:0")

install_worker_metrics(worker)
print("ready", flush=True)
worker.run()
"""


def substitute(expr: str) -> str:
    """Grafana's variables, as Grafana expands them for these settings."""
    return (
        expr.replace("$queue", "|".join(QUEUES))
        .replace("$__rate_interval", RATE_WINDOW)
        .replace("$__interval", "5s")
        .replace("$__range", "5m")
    )


def dashboard_queries() -> list[tuple[str, str]]:
    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in panels(dashboard["panels"])
        for target in panel.get("targets", [])
    ]


class Prometheus:
    def __init__(self, directory: Path, exporter: int, workers: int) -> None:
        self.port = free_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [
                {
                    "job_name": "worqr-exporter",
                    "static_configs": [{"targets": [f"127.0.0.1:{exporter}"]}],
                },
                {
                    "job_name": "worqr-workers",
                    "static_configs": [{"targets": [f"127.0.0.1:{workers}"]}],
                },
            ],
        }
        (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
        assert PROMETHEUS is not None
        self.log = (directory / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def get(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        url = f"http://127.0.0.1:{self.port}{path}" + (f"?{query}" if query else "")
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read()) if path.startswith("/api") else response.status

    def ready(self) -> bool:
        assert self.process.poll() is None, "prometheus exited; see prometheus.log"
        try:
            return bool(self.get("/-/ready") == 200)
        except OSError:
            return False

    def targets_up(self) -> bool:
        active = self.get("/api/v1/targets")["data"]["activeTargets"]
        return len(active) == 2 and all(t["health"] == "up" for t in active)

    def query(self, expr: str) -> list[dict[str, Any]]:
        reply = self.get("/api/v1/query", query=expr)
        assert reply["status"] == "success", reply
        result: list[dict[str, Any]] = reply["data"]["result"]
        return result

    def close(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class Mesh:
    """Worker processes sharing one metrics endpoint (as under `worqr worker
    --processes N`), the standalone exporter, and a producer thread."""

    def __init__(self, directory: Path, url: str, prefix: str) -> None:
        self.url, self.prefix = url, prefix
        self.metrics_dir = directory / "metrics"
        self.metrics_dir.mkdir()
        self.env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir)}
        self.workers: list[subprocess.Popen[bytes]] = []
        self.endpoint: MetricsServer = serve(
            0, registry=multiprocess_registry(str(self.metrics_dir))
        )
        self.exporter_port = free_port()
        self.exporter = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "worqr.metrics.exporter",
                "--url",
                url,
                "--prefix",
                prefix,
                "--port",
                str(self.exporter_port),
            ],
            env={k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"},
        )
        self.stop = threading.Event()
        self.producer = threading.Thread(target=self._produce, daemon=True)

    def start_worker(self) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-c", WORKER, self.url, self.prefix],
            env=self.env,
            stdout=subprocess.PIPE,
        )
        assert process.stdout is not None
        assert process.stdout.readline() == b"ready\n"
        self.workers.append(process)
        return process

    def _produce(self) -> None:
        with Worqr(self.url, prefix=self.prefix) as client:
            n = 0
            while not self.stop.wait(0.05):
                n += 1
                kind = "fail" if n % 10 == 0 else "retry" if n % 7 == 0 else "task"
                client.enqueue_many(
                    TASK_QUEUES[n % 2], [f"{kind}{n}:{(n * 37) % 40}", f"task{n}b:{n % 5}"]
                )
                if n % 15 == 0:
                    client.enqueue(TASK_QUEUES[0], f"doomed{n}:0")
                    client.cancel_tasks(TASK_QUEUES[0], f"doomed{n}:0")
                self._submit(client, n)

    @staticmethod
    def _submit(client: Worqr, n: int) -> None:
        """Jobs: some delayed, a retried one, a failed one, one past its timeout,
        and a delayed one cancelled."""
        payload = f"{'fail' if n % 10 == 0 else 'retry' if n % 7 == 0 else 'job'}{n}:{n % 20}"
        client.submit(JOB_QUEUE, payload, delay=0.3 if n % 3 == 0 else None)
        if n % 20 == 0:
            client.submit(JOB_QUEUE, f"slow{n}:0", timeout=0.05, retries=0)
        if n % 10 == 5:  # a flow: its hop goes through the queue's outbox
            client.submit_chain([Step(JOB_QUEUE, f"chain{n}:0"), Step(JOB_QUEUE)])
        if n % 15 == 0:
            doomed = client.submit(JOB_QUEUE, f"doomed{n}:0", delay=60)
            client.cancel_job(JOB_QUEUE, doomed.id)

    def close(self) -> None:
        self.stop.set()
        if self.producer.is_alive():
            self.producer.join(timeout=10)
        for process in [*self.workers, self.exporter]:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)  # in case a failed test left it frozen
                process.send_signal(signal.SIGTERM)
        for process in [*self.workers, self.exporter]:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        self.endpoint.close()


@pytest.fixture
def mesh(tmp_path: Path, redis_url: str, prefix: str) -> Iterator[Mesh]:
    made = Mesh(tmp_path, redis_url, prefix)
    try:
        yield made
    finally:
        made.close()


def test_every_dashboard_query_returns_data(tmp_path: Path, mesh: Mesh) -> None:
    first = mesh.start_worker()
    mesh.start_worker()
    mesh.producer.start()
    prometheus = Prometheus(tmp_path, mesh.exporter_port, mesh.endpoint.port)
    try:
        wait_until(prometheus.ready, timeout=30, interval=0.2, message="prometheus ready")
        wait_until(prometheus.targets_up, timeout=30, interval=0.2, message="targets up")

        # A worker dies holding tasks: a peer fails it and recovers them; the
        # supervisor would mark it dead and start a replacement.
        with Worqr(mesh.url, prefix=mesh.prefix) as client:

            def worker_id() -> str | None:
                for worker in client.get_workers():
                    if client.get_worker_info(worker).get("pid") == str(first.pid):
                        return worker
                return None

            first_id = wait_until(worker_id, timeout=10)

            def frozen_holding_tasks() -> bool:
                # Frozen, it cannot finish what it holds between the check and the kill.
                first.send_signal(signal.SIGSTOP)
                if any(client.count_worker_processes(q, first_id) for q in TASK_QUEUES):
                    return True
                first.send_signal(signal.SIGCONT)
                return False

            wait_until(frozen_holding_tasks, timeout=10, interval=0.02)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        mark_dead(first.pid, str(mesh.metrics_dir))
        mesh.start_worker()

        queries = dashboard_queries()
        assert len(queries) >= 30

        def empty_queries() -> list[str]:
            return [
                f"{title}: {expr}"
                for title, expr in queries
                if not prometheus.query(substitute(expr))
            ]

        deadline = time.monotonic() + 40
        while (missing := empty_queries()) and time.monotonic() < deadline:
            time.sleep(0.5)  # the next scrape, not a guess: the loop has a deadline
        assert not missing, "dashboard queries without data:\n" + "\n".join(missing)

        def scalar(expr: str) -> float:
            result = prometheus.query(expr)
            return sum(float(series["value"][1]) for series in result) if result else math.nan

        # The data is the mesh's, not zeros: traffic in and out, run times,
        # failures, the dead worker recovered by a peer.
        window = "[1m]"
        assert scalar(f'sum(increase(worqr_queue_events_total{{event="enqueued"}}{window}))') > 0
        assert scalar(f'sum(increase(worqr_queue_events_total{{event="finished"}}{window}))') > 0
        assert scalar(f"sum(increase(worqr_tasks_failed_total{window}))") > 0
        assert scalar(f"sum(increase(worqr_tasks_retried_total{window}))") > 0
        assert scalar('sum(worqr_queue_events_total{event="cancelled"})') > 0
        wait_until(lambda: scalar("sum(worqr_peers_failed_total)") >= 1, timeout=15)
        wait_until(lambda: scalar('sum(worqr_queue_events_total{event="recovered"})') >= 1)
        p95 = scalar(
            "histogram_quantile(0.95, sum by (le) "
            f"(rate(worqr_task_duration_seconds_bucket{window})))"
        )
        assert 0.001 <= p95 <= 0.1
        # Jobs: every state's exact count, delayed jobs promoted in time, start
        # delays small, retries, failures and timeouts counted.
        jobs = f'{{queue="{JOB_QUEUE}"}}'
        for state in ("finished", "failed", "cancelled"):
            assert scalar(f'sum(worqr_jobs{{queue="{JOB_QUEUE}", state="{state}"}})') > 0, state
        assert scalar('max_over_time(sum(worqr_jobs{state="delayed"})[1m:1s])') > 0
        assert scalar(f'sum(increase(worqr_queue_events_total{{event="promoted"}}{window}))') > 0
        assert scalar(f'sum(increase(worqr_queue_events_total{{event="retried"}}{window}))') > 0
        failed_jobs = f'worqr_queue_events_total{{queue="{JOB_QUEUE}", event="failed"}}'
        assert scalar(f"sum(increase({failed_jobs}{window}))") > 0
        assert scalar(f"sum(worqr_job_timeouts_total{jobs})") >= 1
        p50 = scalar(
            "histogram_quantile(0.5, sum by (le) "
            f"(rate(worqr_job_start_delay_seconds_bucket{jobs}{window})))"
        )
        assert 0 <= p50 <= 0.5
        # The schedule every worker declares fires once per half second, not once
        # per worker: the jobs it created are half a second apart, and counted.
        fired = f'worqr_queue_events_total{{queue="{JOB_QUEUE}", event="cron_fired"}}'
        assert scalar(f"sum({fired})") >= 3
        with redis.Redis.from_url(mesh.url) as raw:
            ids = raw.hkeys(f"{{{mesh.prefix}:{JOB_QUEUE}}}:job:data")
        times = sorted(int(i.rpartition(b":")[2]) for i in ids if i.startswith(b"cron:beat:"))
        assert all(b - a == 500 for a, b in itertools.pairwise(times)), times
        assert scalar(f"sum({fired})") <= len(times)
        assert scalar(f"sum(worqr_schedules{jobs})") == 1
        assert scalar("sum(worqr_schedules_stalled)") == 0
        # Due jobs never pile up: a take or the timer holder promotes them at once.
        assert scalar("max_over_time(sum(worqr_jobs_overdue)[1m:1s])") <= 5
        # Flow hops are relayed at once: the outbox holds none late.
        assert scalar(f"max_over_time(sum(worqr_flow_outbox{jobs})[1m:1s])") >= 0
        assert scalar("max_over_time(max(worqr_flow_outbox_oldest_seconds)[1m:1s])") == 0
        wait_until(lambda: scalar("worqr_workers_alive") == 2, timeout=15)
        labels = prometheus.get("/api/v1/label/queue/values", **{"match[]": "worqr_queue_tasks"})
        assert set(labels["data"]) == set(QUEUES)  # what the $queue variable offers
    finally:
        prometheus.close()
