"""`WorkerMetrics`: what one worker process did, counted from its hooks (the
worker's processes and its client's life).

Every per-queue series is created at 0 the first time a queue is seen, so a
dashboard's ``rate()`` shows 0 rather than "no data" for events that have not
happened yet; the job series (start delay, timeouts) the first time a job of
the queue starts, so task queues carry none. In prometheus_client's
multiprocess mode (`serve.prepare_multiprocess_dir`) counters and histograms of
every child add up, and the in-process gauge sums the live children only
("livesum"): a dead child's running tasks vanish from it.
"""

from __future__ import annotations

import threading

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from .._hooks import Hooks

DURATION_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
)
"""Task run time buckets, seconds: 1 ms to 10 minutes (longer runs land in +Inf)."""

START_DELAY_BUCKETS = DURATION_BUCKETS
"""Job start delay buckets, seconds: 1 ms to 10 minutes (later starts land in +Inf)."""

BLOCKED_BUCKETS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Blocked event loop buckets, seconds: reported only past one second."""

Q = ("queue",)


class WorkerMetrics(Hooks):
    """The metrics of one worker process, as `worqr.Hooks`: every started process
    ends in exactly one of finished, failed, retried, cancelled or fenced, and
    the client's life events count too (pass it to ``Worker.add_hooks`` or
    ``Worqr.add_hooks``). Jobs count as tasks there (a job's failed attempt that
    will be retried after its backoff is "retried", one that failed for good
    "failed"), and also in the job metrics: their start delay and timeouts.

    Create one per process (see `worker_metrics`): in multiprocess mode two
    instances in one process would overwrite each other's values.
    """

    def __init__(self, registry: CollectorRegistry | None = REGISTRY) -> None:
        def counter(name: str, doc: str, labels: tuple[str, ...] = Q) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        self.started = counter("worqr_tasks_started", "Tasks this worker started")
        self.finished = counter("worqr_tasks_finished", "Tasks whose handler returned")
        self.failed = counter("worqr_tasks_failed", "Tasks whose handler raised (dead-lettered)")
        self.retried = counter(
            "worqr_tasks_retried", "Tasks returned to the front of their queue (worqr.Retry)"
        )
        self.cancelled = counter("worqr_tasks_cancelled", "Running tasks stopped by a cancel")
        self.fenced = counter(
            "worqr_tasks_fenced",
            "Acknowledgements refused because the process no longer existed (lease lost)",
        )
        self.duration = Histogram(
            "worqr_task_duration_seconds",
            "Run time of handlers, by queue",
            Q,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.job_start_delay = Histogram(
            "worqr_job_start_delay_seconds",
            "Seconds from a job being due (or queued) to its start, on Redis's clock",
            Q,
            buckets=START_DELAY_BUCKETS,
            registry=registry,
        )
        self.job_timeouts = counter("worqr_job_timeouts", "Jobs whose handler ran past its timeout")
        self.in_process = Gauge(
            "worqr_tasks_in_process",
            "Tasks running in this worker now",
            Q,
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.notifications = counter(
            "worqr_notifications", "Wake-ups received (pub/sub hints and fallback polls)"
        )
        self.dequeues = counter(
            "worqr_dequeues",
            "Dequeue calls by result: empty ones after a wake-up are the thundering herd",
            ("queue", "result"),
        )
        self.peers_failed = counter("worqr_peers_failed", "Dead workers this worker failed", ())
        self.recovered = counter(
            "worqr_tasks_recovered", "Tasks of dead peers this worker returned to their queue", ()
        )
        self.poisoned = counter(
            "worqr_tasks_poisoned",
            "Tasks of dead peers dead-lettered for exceeding max_recoveries",
            (),
        )
        self.heartbeat_failures = counter(
            "worqr_heartbeat_failures", "Heartbeats that could not reach Redis", ()
        )
        self.lease_losses = counter(
            "worqr_lease_losses", "Times this worker found its lease gone (failed by peers)", ()
        )
        self.registrations = counter(
            "worqr_registrations", "Registrations in the mesh, the first and every later one", ()
        )
        self.redis_errors = counter("worqr_redis_errors", "Redis outages seen by a loop", ())
        self.redis_reconnects = counter(
            "worqr_redis_reconnects", "Loops that reached Redis again after an outage", ()
        )
        self.loop_blocked = Histogram(
            "worqr_event_loop_blocked_seconds",
            "Times the worker's event loop made no progress for over a second, by how long",
            buckets=BLOCKED_BUCKETS,
            registry=registry,
        )
        self._queues: set[str] = set()
        self._job_queues: set[str] = set()
        self._lock = threading.Lock()

    def _seen(self, queue: str) -> str:
        # Create every series of a new queue at 0, so rates read 0, not "no data".
        if queue not in self._queues:
            with self._lock:
                if queue not in self._queues:
                    for family in (
                        self.started,
                        self.finished,
                        self.failed,
                        self.retried,
                        self.cancelled,
                        self.fenced,
                        self.notifications,
                    ):
                        family.labels(queue)
                    self.dequeues.labels(queue, "empty")
                    self.dequeues.labels(queue, "tasks")
                    self.duration.labels(queue)
                    self.in_process.labels(queue)
                    self._queues.add(queue)
        return queue

    def _seen_job(self, queue: str) -> str:
        # A queue's first job: its job series at 0 too (task queues never get them).
        self._seen(queue)
        if queue not in self._job_queues:
            with self._lock:
                if queue not in self._job_queues:
                    self.job_start_delay.labels(queue)
                    self.job_timeouts.labels(queue)
                    self._job_queues.add(queue)
        return queue

    # -- worker hooks ------------------------------------------------------------

    def on_started(self, queue: str) -> None:
        self.started.labels(self._seen(queue)).inc()
        self.in_process.labels(queue).inc()

    def _ended(self, queue: str, seconds: float | None) -> None:
        self.in_process.labels(self._seen(queue)).dec()
        if seconds is not None:
            self.duration.labels(queue).observe(seconds)

    def on_finished(self, queue: str, seconds: float) -> None:
        self._ended(queue, seconds)
        self.finished.labels(queue).inc()

    def on_failed(self, queue: str, seconds: float) -> None:
        self._ended(queue, seconds)
        self.failed.labels(queue).inc()

    def on_retried(self, queue: str) -> None:
        self._ended(queue, None)
        self.retried.labels(queue).inc()

    def on_cancelled(self, queue: str) -> None:
        self._ended(queue, None)
        self.cancelled.labels(queue).inc()

    def on_fenced(self, queue: str) -> None:
        self._ended(queue, None)
        self.fenced.labels(queue).inc()

    def on_dequeue(self, queue: str, asked: int, got: int) -> None:
        self.dequeues.labels(self._seen(queue), "tasks" if got else "empty").inc()

    def on_wakeup(self, queue: str) -> None:
        self.notifications.labels(self._seen(queue)).inc()

    def on_job_started(self, queue: str, waited: float) -> None:
        self.job_start_delay.labels(self._seen_job(queue)).observe(max(0.0, waited))

    def on_job_timeout(self, queue: str) -> None:
        self.job_timeouts.labels(self._seen_job(queue)).inc()

    # -- the client's life --------------------------------------------------------

    def on_registered(self, worker_id: str) -> None:
        self.registrations.inc()

    def on_lease_lost(self, worker_id: str) -> None:
        self.lease_losses.inc()

    def on_peer_failed(self, worker_id: str, requeued: int, dead_lettered: int) -> None:
        self.peers_failed.inc()
        self.recovered.inc(requeued)
        self.poisoned.inc(dead_lettered)

    def on_heartbeat_failed(self, error: str) -> None:
        self.heartbeat_failures.inc()

    def on_redis_down(self, what: str, error: str) -> None:
        self.redis_errors.inc()

    def on_redis_up(self, what: str, seconds: float) -> None:
        self.redis_reconnects.inc()

    def on_loop_blocked(self, seconds: float, culprit: str) -> None:
        self.loop_blocked.observe(seconds)


_default: WorkerMetrics | None = None
_default_lock = threading.Lock()


def worker_metrics() -> WorkerMetrics:
    """This process's `WorkerMetrics`, created on first use in the default registry."""
    global _default
    with _default_lock:
        if _default is None:
            _default = WorkerMetrics()
        return _default
