"""Metrics scraped by Prometheus: a worker serves its own metrics, the exporter
serves the mesh's queue figures, and a real Prometheus (when `prometheus` is on
PATH) scrapes both and answers a query about the work done.

Run:  python examples/metrics_prometheus.py --url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import worqr
from worqr.metrics import install_worker_metrics, serve
from worqr.metrics.exporter import run_exporter

T = TypeVar("T")
TASKS = 50


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 30) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise SystemExit(f"gave up waiting for {what}")


def fetch(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return str(reply.read().decode())
    except OSError:
        return None


def prometheus_query(port: int, expr: str) -> float | None:
    query = urllib.parse.urlencode({"query": expr})
    body = fetch(f"http://127.0.0.1:{port}/api/v1/query?{query}")
    result = json.loads(body)["data"]["result"] if body else []
    return float(result[0]["value"][1]) if result else None


def scrape_with_prometheus(targets: list[str], expr: str, want: float) -> float:
    """Start a real Prometheus scraping ``targets`` every second; return ``expr``."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp, "prometheus.yml")
        config.write_text(
            "global: {scrape_interval: 1s}\n"
            "scrape_configs:\n"
            f"  - job_name: worqr\n    static_configs: [{{targets: {json.dumps(targets)}}}]\n"
        )
        server = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp}/data",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            return wait_for(
                "Prometheus to scrape the worker",
                lambda: (value := prometheus_query(port, expr)) == want and value,
            )
        finally:
            server.terminate()
            server.wait(10)


def main(url: str | None, prefix: str) -> None:
    worker = worqr.Worker(url, prefix=prefix, concurrency=4)
    done = threading.Event()
    count = [0]

    @worker.handler("thumbnails")
    def make_thumbnail(task: str) -> None:
        count[0] += 1
        if count[0] == TASKS:
            done.set()

    install_worker_metrics(worker)  # counters, run-time histogram, in-process gauge
    worker_port, exporter_port = free_port(), free_port()
    metrics = serve(worker_port)  # bound to 127.0.0.1
    stop_exporter = threading.Event()
    exporter = threading.Thread(
        target=run_exporter, args=(url, prefix, exporter_port, "127.0.0.1", stop_exporter)
    )
    exporter.start()
    running = threading.Thread(target=worker.run)
    running.start()
    try:
        with worqr.Worqr(url, prefix=prefix) as producer:
            producer.enqueue_many("thumbnails", [f"photo-{i}.jpg" for i in range(TASKS)])
            if not done.wait(30):
                raise SystemExit("the worker did not finish")

            # A task counts as finished once its finish is acknowledged, just after
            # its handler returned: wait for the last acknowledgements to land.
            def finished_line() -> str | None:
                own = fetch(f"http://127.0.0.1:{worker_port}/metrics") or ""
                found = [x for x in own.splitlines() if x.startswith("worqr_tasks_finished_total")]
                return found[0] if found and found[0].endswith(f" {TASKS:.1f}") else None

            print(f"worker endpoint: {wait_for('worker metrics', finished_line)}")
            mesh = wait_for("exporter", lambda: fetch(f"http://127.0.0.1:{exporter_port}/metrics"))
            finished = next(
                x for x in mesh.splitlines() if 'event="finished"' in x and x.startswith("worqr_")
            )
            print(f"exporter endpoint: {finished}")
            if shutil.which("prometheus"):
                targets = [f"127.0.0.1:{worker_port}", f"127.0.0.1:{exporter_port}"]
                expr = 'sum(worqr_tasks_finished_total{queue="thumbnails"})'
                value = scrape_with_prometheus(targets, expr, float(TASKS))
                print(f"prometheus: {expr} = {value:g}")
            else:
                print("prometheus: not installed here; the endpoints above are what it scrapes")
            producer.delete_queue("thumbnails")
    finally:
        worker.stop()
        running.join(30)
        stop_exporter.set()
        exporter.join(10)
        metrics.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("WORQR_REDIS_URL"))
    parser.add_argument("--prefix", default="worqr-example")
    args = parser.parse_args()
    main(args.url, args.prefix)
