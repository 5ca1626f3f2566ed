"""Serving metrics over HTTP, and prometheus_client's multiprocess mode.

`worqr worker --processes N` serves one endpoint for all its children:

1. the parent calls `prepare_multiprocess_dir()` before it starts any child (the
   children inherit ``PROMETHEUS_MULTIPROC_DIR`` and write their values to files
   there, one set per pid);
2. the parent calls `serve(port)`, which merges every child's files per scrape;
3. each child calls `install_worker_metrics(worker)`;
4. the parent calls `mark_dead(pid)` whenever a child exits, so the child's
   gauges ("livesum") stop counting while its counters and histograms remain.

A single process may skip step 1: `serve` then exports the default registry.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, multiprocess, start_http_server

from .worker import WorkerMetrics, worker_metrics

ENV = "PROMETHEUS_MULTIPROC_DIR"


class MetricsServer:
    """A running metrics endpoint; `port` is the bound port (useful with port 0)."""

    def __init__(self, server: Any, thread: Any) -> None:
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def prepare_multiprocess_dir() -> str:
    """Make a fresh, empty directory for the children's metric files, point
    ``PROMETHEUS_MULTIPROC_DIR`` at it (inherited by children started later) and
    return it. Fresh each time: files of an earlier run would count twice."""
    path = tempfile.mkdtemp(prefix="worqr-metrics-")
    os.environ[ENV] = path
    # prometheus_client picks its value class when first imported; if that was
    # before the variable existed, metrics created from now on in this process
    # must still use the files.
    from prometheus_client import values

    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]
    return path


def remove_multiprocess_dir(path: str) -> None:
    """Delete a directory made by `prepare_multiprocess_dir` (after the children exit)."""
    if os.environ.get(ENV) == path:
        del os.environ[ENV]
    shutil.rmtree(path, ignore_errors=True)


def multiprocess_registry(path: str | None = None) -> CollectorRegistry:
    """A registry that merges the metric files of every process at each scrape."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=path)  # type: ignore[no-untyped-call]
    return registry


def serve(
    port: int, host: str = "127.0.0.1", registry: CollectorRegistry | None = None
) -> MetricsServer:
    """Serve ``/metrics`` on ``host:port`` from a background thread.

    Without ``registry``: the merged children's files in multiprocess mode, else
    the default registry. Binds to loopback unless told otherwise.
    """
    if registry is None:
        registry = multiprocess_registry() if os.environ.get(ENV) else REGISTRY
    server, thread = start_http_server(port, addr=host, registry=registry)
    return MetricsServer(server, thread)


def mark_dead(pid: int, path: str | None = None) -> None:
    """Forget the live gauges of a child that exited (its counters stay).
    ``path`` defaults to ``$PROMETHEUS_MULTIPROC_DIR``; without either, a no-op."""
    path = path or os.environ.get(ENV)
    if path:
        multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]


def install_worker_metrics(worker: Any, metrics: WorkerMetrics | None = None) -> WorkerMetrics:
    """Count what ``worker`` does: add this process's `WorkerMetrics` to its hooks
    (the worker passes them on to its client). Returns the metrics."""
    metrics = metrics or worker_metrics()
    worker.add_hooks(metrics)
    return metrics
