"""`MeshCollector`: the queue-wide figures only Redis knows, read at scrape time.

Exported once for the mesh (by `worqr exporter`), never by every worker: N
workers exporting the same queue length would make ``sum()`` lie. A scrape is a
few pipelined round trips, bounded by `max_queues` and `MGET_BATCH`; it never
raises (Redis down gives ``worqr_collector_up 0`` and one more collector error).

Job queues (``config.kind = jobs``) also get their exact job counts by state,
from one ``job_counts`` script call each in the same pipeline.
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

from .._checks import seconds
from .._clients.connect import resolve_url
from .._clients.resend import no_redis_retries
from .._clients.sentinel import client_from_url
from .._clients.sync_exec import SyncExecutor
from .._core import job_scripts
from .._core.calls import Call, command
from .._jobs import STATES
from .._keys import MeshKeys
from .._settings import Settings
from .flow_metrics import outbox_metrics
from .group_metrics import group_metrics
from .limit_metrics import limit_metrics
from .schedules import STALL_AFTER, STALLED_HELP, read_schedules

logger = logging.getLogger("worqr.metrics")

TASK_EVENTS = (
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
"""The events the task scripts count in a task queue's `QueueKeys.stats`."""

JOB_EVENTS = (
    "submitted",
    "deduplicated",
    "promoted",
    "started",
    "finished",
    "retried",
    "failed",
    "poisoned",
    "cancelled",
    "recovered",
    "released",
    "stopped",
    "redriven",
    "purged",
    "purged_by_cap",
    "rate_limited",
    "cron_fired",
    "cron_skipped",
)
"""The events the job scripts count in a job queue's `QueueKeys.stats`: finished,
failed (for good) and cancelled are terminal transitions; retried is a failed
attempt that will run again after its backoff; poisoned, a job failed for too
many recoveries (it counts as failed too); cron_fired/cron_skipped: schedules."""

STAT_EVENTS = TASK_EVENTS + tuple(e for e in JOB_EVENTS if e not in TASK_EVENTS)
"""Every field of the lifetime counter hashes that is exported: a task queue
exports its `TASK_EVENTS`, a job queue its `JOB_EVENTS`, so the ``event`` label
stays bounded and no queue carries zeros for events its kind cannot have."""

DEDUP_MODES = ("throttle", "debounce", "keep_last")
DEDUP_FIELDS = tuple(f"deduplicated:{mode}" for mode in DEDUP_MODES)
"""The job scripts' counters of submits a dedup key deduplicated, by mode
(``lua/lib/dedup.lua``), read with the events: ``worqr_jobs_deduplicated`` by
queue and mode (the ``deduplicated`` event also counts ids and unique payloads)."""

STAT_FIELDS = STAT_EVENTS + DEDUP_FIELDS

MGET_BATCH = 1000  # alive keys per MGET
PIPELINE_QUEUES = 200  # queues read per pipeline round trip


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _is_jobs(kind: bytes | str | None) -> bool:
    """Whether a queue's ``config.kind`` marks a job queue."""
    return kind is not None and _text(kind) == "jobs"


def _job_counts(reply: list[Any]) -> tuple[dict[str, int], int]:
    """The reply of ``job_counts``: jobs per state (all seven, zeros included)
    and the overdue ones (as `JobReads.job_counts` reads it)."""
    counts: dict[str, int] = dict.fromkeys(STATES, 0)
    overdue = 0
    for i in range(0, len(reply), 2):
        field, number = _text(reply[i]), max(0, int(reply[i + 1]))
        if field == "overdue":
            overdue = number
        elif field in counts:
            counts[field] = number
    return counts, overdue


class MeshCollector(Collector):
    """A prometheus_client collector of one mesh (one Redis, one prefix).

    Exports ``worqr_queue_tasks``, ``worqr_queue_processes``, ``worqr_queue_failed``,
    ``worqr_queue_workers`` (by queue), ``worqr_queue_events_total`` (by queue and
    event), for job queues ``worqr_jobs`` (by queue and state) and
    ``worqr_jobs_overdue``, ``worqr_schedules`` and ``worqr_schedules_stalled`` (by
    queue), ``worqr_queues``, ``worqr_workers_registered``,
    ``worqr_workers_alive``, and about itself ``worqr_collector_up``,
    ``worqr_collector_errors_total``, ``worqr_collector_scrape_seconds``.

    On a job queue ``worqr_queue_tasks`` is the number of queued jobs (the ready
    list's length would count the tombstones of cancelled jobs and miss the
    prioritised ones) and ``worqr_queue_failed`` the number of failed jobs, as
    ``count_failed`` reads them.
    """

    def __init__(
        self,
        redis: redis_py.Redis | RedisCluster,
        prefix: str = "worqr",
        max_queues: int = 1000,
        *,
        stall_after: float = STALL_AFTER,
    ):
        self.redis = redis
        # A schedule this many seconds past its next fire counts as stalled.
        self.stall_after = seconds("stall_after", stall_after, above=True)
        # The job counts' script calls (NOSCRIPT: loaded, and the batch sent again).
        self._executor = SyncExecutor(redis, Settings())
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
        stall_after: float = STALL_AFTER,
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
        return cls(client, prefix, stall_after=stall_after)

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
            pipe.smembers(mesh.jobqueues)
            raw_queues, raw_workers, raw_jobqueues = pipe.execute()
        queues = sorted(_text(q) for q in raw_queues)
        workers = sorted(_text(w) for w in raw_workers)
        listed = {_text(q) for q in raw_jobqueues}
        alive = self._count_alive(workers)
        shown = queues[: self.max_queues]

        tasks = _labelled("worqr_queue_tasks", "Tasks (jobs: queued jobs) waiting", ["queue"])
        processes = _labelled("worqr_queue_processes", "Tasks in process", ["queue"])
        failed = _labelled(
            "worqr_queue_failed", "Dead letters (jobs: failed jobs retained)", ["queue"]
        )
        members = _labelled("worqr_queue_workers", "Workers that joined the queue", ["queue"])
        events = CounterMetricFamily(
            "worqr_queue_events",
            "Lifetime task or job events of the queue, counted by the Lua scripts",
            labels=["queue", "event"],
        )
        jobs = _labelled(
            "worqr_jobs", "Jobs in each state (terminal ones until purged)", ["queue", "state"]
        )
        overdue = _labelled(
            "worqr_jobs_overdue", "Delayed and retrying jobs already due, not yet queued", ["queue"]
        )
        deduplicated = CounterMetricFamily(
            "worqr_jobs_deduplicated",
            "Submits a dedup key answered with the key's job, creating nothing, by mode",
            labels=["queue", "mode"],
        )
        schedules = _labelled("worqr_schedules", "Schedules of the queue", ["queue"])
        stalled = _labelled("worqr_schedules_stalled", STALLED_HELP, ["queue"])
        for start in range(0, len(shown), PIPELINE_QUEUES):
            batch = shown[start : start + PIPELINE_QUEUES]
            # Registered job queues' counts ride in the first round trip; the kind marker decides
            # (one missing from the registry costs a round trip; a listed task queue is ignored).
            replies, counted = self._read_batch(batch, listed)
            late = [q for q in batch if _is_jobs(replies[q][5]) and q not in counted]
            if late:
                counted.update(self._read_job_counts(late))
            job_queues = [q for q in batch if _is_jobs(replies[q][5])]
            for queue, (n_schedules, n_stalled) in read_schedules(
                self.redis, self.mesh, job_queues, self.stall_after
            ).items():
                schedules.add_metric([queue], float(n_schedules))
                stalled.add_metric([queue], float(n_stalled))
            for queue in batch:
                n_tasks, n_processes, n_failed, n_members, stats, kind = replies[queue]
                is_jobs = _is_jobs(kind)
                kind_events = JOB_EVENTS if is_jobs else TASK_EVENTS
                if is_jobs:
                    counts, due = counted[queue]
                    n_tasks, n_failed = counts["queued"], counts["failed"]
                    for state, number in counts.items():
                        jobs.add_metric([queue, state], float(number))
                    overdue.add_metric([queue], float(due))
                    _add_dedup(deduplicated, queue, stats[len(STAT_EVENTS) :])
                tasks.add_metric([queue], float(n_tasks))
                processes.add_metric([queue], float(n_processes))
                failed.add_metric([queue], float(n_failed))
                members.add_metric([queue], float(n_members))
                by_event = dict(zip(STAT_EVENTS, stats, strict=False))
                for event in kind_events:
                    events.add_metric([queue, event], float(by_event[event] or 0))
        return [
            tasks,
            processes,
            failed,
            members,
            events,
            jobs,
            overdue,
            deduplicated,
            schedules,
            stalled,
            _gauge("worqr_queues", "Queues in the mesh registry", float(len(queues))),
            _gauge("worqr_workers_registered", "Workers in the mesh registry", float(len(workers))),
            _gauge("worqr_workers_alive", "Registered workers whose lease is alive", float(alive)),
            *outbox_metrics(self._executor, mesh, [q for q in shown if q in listed]),
            *limit_metrics(self.redis, mesh, [q for q in shown if q in listed]),
            *group_metrics(self._executor, mesh, [q for q in shown if q in listed]),
        ]

    def _read_batch(
        self, batch: list[str], listed: set[str]
    ) -> tuple[dict[str, list[Any]], dict[str, tuple[dict[str, int], int]]]:
        """One round trip: every queue's lengths, counters and kind, and the job
        counts of those listed as job queues."""
        calls: list[Call] = []
        for queue in batch:
            keys = self.mesh.queue(queue)
            calls += (
                command("LLEN", keys.tasks),
                command("HLEN", keys.processes),
                command("LLEN", keys.failed),
                command("SCARD", keys.members),
                command("HMGET", keys.stats, *STAT_FIELDS),
                command("HGET", keys.config, "kind"),
            )
            if queue in listed:
                calls.append(job_scripts.job_counts(keys))
        flat = self._executor.batch(calls)
        replies: dict[str, list[Any]] = {}
        counted: dict[str, tuple[dict[str, int], int]] = {}
        at = 0
        for queue in batch:
            replies[queue] = flat[at : at + 6]
            at += 6
            if queue in listed:
                if _is_jobs(replies[queue][5]):
                    counted[queue] = _job_counts(flat[at])
                at += 1
        return replies, counted

    def _read_job_counts(self, queues: list[str]) -> dict[str, tuple[dict[str, int], int]]:
        calls = [job_scripts.job_counts(self.mesh.queue(queue)) for queue in queues]
        replies = self._executor.batch(calls)
        return {q: _job_counts(reply) for q, reply in zip(queues, replies, strict=True)}

    def _count_alive(self, workers: list[str]) -> int:
        alive = 0
        for start in range(0, len(workers), MGET_BATCH):
            batch = workers[start : start + MGET_BATCH]
            flags = self.redis.mget([self.mesh.alive(w) for w in batch])
            alive += sum(flag is not None for flag in flags)
        return alive

    def close(self) -> None:
        self.redis.close()


def _add_dedup(family: CounterMetricFamily, queue: str, values: list[Any]) -> None:
    for mode, value in zip(DEDUP_MODES, values, strict=True):
        family.add_metric([queue, mode], float(value or 0))


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _labelled(name: str, documentation: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)
