"""Reading metrics: an HTTP ``/metrics`` endpoint, or a collector's samples."""

from __future__ import annotations

import urllib.request

from prometheus_client.registry import Collector

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
