"""Prometheus metrics for worqr: the only package that imports ``prometheus_client``.

- `collector.MeshCollector`: queue-wide figures read from Redis at scrape time,
  exported once for the mesh (by `worqr exporter`).
- `worker.WorkerMetrics`: what one worker process did (worker hooks and client
  observer events).
- `serve`: the HTTP endpoint, and prometheus_client's multiprocess mode for
  `worqr worker --processes N` (one endpoint for every child).

Labels never hold payloads, process ids or worker ids: the queue name is the only
user-chosen label value.
"""

from .collector import MeshCollector
from .serve import install_worker_metrics, mark_dead, prepare_multiprocess_dir, serve
from .worker import WorkerMetrics

__all__ = [
    "MeshCollector",
    "WorkerMetrics",
    "install_worker_metrics",
    "mark_dead",
    "prepare_multiprocess_dir",
    "serve",
]
