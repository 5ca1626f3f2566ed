"""`MeshCollector`: the queue-wide figures only Redis knows, read at scrape time.

Exported once for the mesh (by `worqr exporter`), never by every worker: N
workers exporting the same queue length would make ``sum()`` lie. A scrape is a
few pipelined round trips, bounded by `max_queues` and `MGET_BATCH`; it never
raises (Redis down gives ``worqr_collector_up 0`` and one more collector error).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import redis as redis_py
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from redis.cluster import RedisCluster

from .._clients.connect import resolve_url
from .._clients.resend import no_redis_retries
from .._clients.sentinel import client_from_url
from .._keys import MeshKeys

logger = logging.getLogger("worqr.metrics")

STAT_EVENTS = (
    "enqueued",
    "dequeued",
    "finished",
    "stopped",
    "released",
    "recovered",
    "dead_lettered",
    "failed",
    "cancelled",
    "redriven",
)
"""Fields of each queue's lifetime counter hash (`QueueKeys.stats`), written by
the Lua scripts. Only these are exported, so the ``event`` label stays bounded."""

MGET_BATCH = 1000  # alive keys per MGET
PIPELINE_QUEUES = 200  # queues read per pipeline round trip


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


class MeshCollector(Collector):
    """A prometheus_client collector of one mesh (one Redis, one prefix).

    Exports ``worqr_queue_tasks``, ``worqr_queue_processes``, ``worqr_queue_failed``,
    ``worqr_queue_workers`` (by queue), ``worqr_queue_events_total`` (by queue and
    event), ``worqr_queues``, ``worqr_workers_registered``, ``worqr_workers_alive``,
    and about itself ``worqr_collector_up``, ``worqr_collector_errors_total``,
    ``worqr_collector_scrape_seconds``.
    """

    def __init__(
        self, redis: redis_py.Redis | RedisCluster, prefix: str = "worqr", max_queues: int = 1000
    ):
        self.redis = redis
        self.mesh = MeshKeys(prefix)
        self.max_queues = max_queues
        self.errors = 0
        self._up = True
        self._lock = threading.Lock()  # scrapes may run concurrently (threaded server)

    @classmethod
    def from_url(
        cls,
        url: str | None = None,
        prefix: str = "worqr",
        *,
        timeout: float = 2.0,
        cluster: bool = False,
    ) -> MeshCollector:
        """A collector with its own connection; ``timeout`` bounds each round trip,
        so a stalled Redis cannot hang a scrape past Prometheus' own timeout.

        With ``cluster=True`` the URL names a node of a Redis Cluster; redis-py
        reads the slot map at once, so the cluster must be reachable now. The
        pipelines are read-only and not transactions: redis-py splits them by node.
        A ``redis+sentinel://`` URL reaches the master through Sentinel.
        """
        options: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
        client: Any
        if cluster:
            client = RedisCluster.from_url(resolve_url(url), retry=no_redis_retries(), **options)
        else:
            client = client_from_url(resolve_url(url), retry=no_redis_retries(), **options)
        return cls(client, prefix)

    def describe(self) -> Iterable[Metric]:
        return []  # unchecked: the series depend on what Redis holds at scrape time

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            started = time.monotonic()
            try:
                families = self._read()
                up = 1.0
            except Exception as error:  # a scrape must never fail: report it instead
                self.errors += 1
                families = []
                up = 0.0
                if self._up:  # log once per outage, not once per scrape
                    logger.warning("metrics: cannot read the mesh from Redis: %r", error)
            else:
                if not self._up:
                    logger.warning("metrics: reading the mesh from Redis again")
            self._up = bool(up)
            elapsed = time.monotonic() - started
        yield from families
        yield _gauge("worqr_collector_up", "1 if the last scrape read Redis, else 0", up)
        yield _gauge(
            "worqr_collector_scrape_seconds", "Seconds the last scrape spent in Redis", elapsed
        )
        errors = CounterMetricFamily("worqr_collector_errors", "Scrapes that could not read Redis")
        errors.add_metric([], float(self.errors))
        yield errors

    def _read(self) -> list[Metric]:
        mesh = self.mesh
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.smembers(mesh.queues)
            pipe.smembers(mesh.workers)
            raw_queues, raw_workers = pipe.execute()
        queues = sorted(_text(q) for q in raw_queues)
        workers = sorted(_text(w) for w in raw_workers)
        alive = self._count_alive(workers)
        shown = queues[: self.max_queues]

        tasks = _labelled("worqr_queue_tasks", "Tasks waiting in the queue", ["queue"])
        processes = _labelled("worqr_queue_processes", "Tasks in process", ["queue"])
        failed = _labelled("worqr_queue_failed", "Dead letters (failed list length)", ["queue"])
        members = _labelled("worqr_queue_workers", "Workers that joined the queue", ["queue"])
        events = CounterMetricFamily(
            "worqr_queue_events",
            "Lifetime task events of the queue, counted by the Lua scripts",
            labels=["queue", "event"],
        )
        for start in range(0, len(shown), PIPELINE_QUEUES):
            batch = shown[start : start + PIPELINE_QUEUES]
            with self.redis.pipeline(transaction=False) as pipe:
                for queue in batch:
                    keys = mesh.queue(queue)
                    pipe.llen(keys.tasks)
                    pipe.hlen(keys.processes)
                    pipe.llen(keys.failed)
                    pipe.scard(keys.members)
                    pipe.hmget(keys.stats, list(STAT_EVENTS))
                replies: list[Any] = pipe.execute()
            for i, queue in enumerate(batch):
                n_tasks, n_processes, n_failed, n_members, stats = replies[5 * i : 5 * i + 5]
                tasks.add_metric([queue], float(n_tasks))
                processes.add_metric([queue], float(n_processes))
                failed.add_metric([queue], float(n_failed))
                members.add_metric([queue], float(n_members))
                for event, value in zip(STAT_EVENTS, stats, strict=True):
                    events.add_metric([queue, event], float(value or 0))
        return [
            tasks,
            processes,
            failed,
            members,
            events,
            _gauge("worqr_queues", "Queues in the mesh registry", float(len(queues))),
            _gauge("worqr_workers_registered", "Workers in the mesh registry", float(len(workers))),
            _gauge("worqr_workers_alive", "Registered workers whose lease is alive", float(alive)),
        ]

    def _count_alive(self, workers: list[str]) -> int:
        alive = 0
        for start in range(0, len(workers), MGET_BATCH):
            batch = workers[start : start + MGET_BATCH]
            flags = self.redis.mget([self.mesh.alive(w) for w in batch])
            alive += sum(flag is not None for flag in flags)
        return alive

    def close(self) -> None:
        self.redis.close()


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _labelled(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)
