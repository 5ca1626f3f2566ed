"""Reading metrics: an HTTP ``/metrics`` endpoint, a collector's samples, or a
real Prometheus (`Prometheus`) that scrapes endpoints and answers PromQL."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.registry import Collector

from worqr.embedded import free_port

Snapshot = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape_metrics(port: int) -> str | None:
    """The text of ``http://127.0.0.1:port/metrics``, or None while nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
            return str(reply.read().decode())
    except OSError:
        return None


def scrape(collector: Collector) -> Snapshot:
    """One scrape of ``collector``: every sample by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in collector.collect()
        for sample in family.samples
    }


def value(snapshot: Snapshot, name: str, **labels: str) -> float | None:
    """The sample ``name`` with exactly ``labels`` in a `scrape`, or None."""
    return snapshot.get((name, frozenset(labels.items())))


class Prometheus:
    """A real Prometheus on a free loopback port, scraping ``targets`` (job name
    -> port on 127.0.0.1) every second, its data under ``directory``."""

    def __init__(self, binary: str, directory: Path, targets: dict[str, int]) -> None:
        self.port = free_port()
        self.targets = targets
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
                for job, port in targets.items()
            ],
        }
        (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log_path = directory / "prometheus.log"
        self.log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                binary,
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
        assert self.process.poll() is None, f"prometheus exited; see {self.log_path}"
        try:
            return bool(self.get("/-/ready") == 200)
        except OSError:
            return False

    def targets_up(self) -> bool:
        active = self.get("/api/v1/targets")["data"]["activeTargets"]
        return len(active) == len(self.targets) and all(t["health"] == "up" for t in active)

    def query(self, expr: str) -> list[dict[str, Any]]:
        reply = self.get("/api/v1/query", query=expr)
        assert reply["status"] == "success", reply
        result: list[dict[str, Any]] = reply["data"]["result"]
        return result

    def scalar(self, expr: str) -> float:
        """The sum of ``expr``'s series now (NaN when it has none)."""
        result = self.query(expr)
        return sum(float(series["value"][1]) for series in result) if result else math.nan

    def close(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
