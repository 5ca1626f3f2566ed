"""Settings of the worker runtime, grouped in one frozen, validated dataclass."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .._checks import count, flag, optional_count, seconds
from .._keys import validate_name
from .._settings import Settings


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    """How a `Worker` runs.

    Attributes:
        client: the mesh client's settings (prefix, ttl, heartbeat, ...).
        concurrency: most handlers running at once (persistent ones excluded);
            taking ahead, a worker holds more processes than that.
        grace_period: seconds a graceful stop waits for running handlers before it
            returns their tasks to the front of their queues.
        queue_limits: optional caps of in-flight processes per queue. A persistent
            queue's cap defaults to ``concurrency``.
        log_payloads: include task payloads (truncated) in failure logs; off by
            default because payloads may hold secrets.
        batch: most tasks taken by one dequeue call; None takes the whole free
            capacity at once (fewest round trips). A smaller batch spreads a burst
            over more workers of the mesh.
        take_ahead: while its handlers end within 2 ms on average, the worker
            may hold up to three times ``concurrency`` processes more than it
            runs (fewer as handlers get longer: a process waits for a handler
            about 2 ms at most), so a handler that ends finds its next task
            waiting instead of a round trip to Redis; each queue's tasks start
            oldest first, and the queues take turns.
            Never on a queue with its own limit in ``queue_limits``, nor on
            persistent queues.
        health_port: serve the health probes ``/livez`` and ``/readyz`` on this
            port while the worker runs (0: a free one, logged); None serves none.
        health_host: the address the probes bind (loopback unless said).
        livez_after: seconds the event loop or a take loop may make no progress
            before ``/livez`` answers 503; shorter than ``client.max_blocked``.
        isolated: run every sync handler in a child process (as
            ``isolated=True`` on each; docs/isolation.md).
        max_jobs_per_child: replace a handler child after this many jobs
            (None: never for that reason).
        max_memory_per_child: replace a handler child whose resident memory is
            above this many bytes after a job (None: never for that reason).
        child_grace: seconds a stopped handler child gets between SIGTERM and
            SIGKILL (a timeout, a cancel, a shutdown past its grace period).
        history: keep the metrics history of the job queues (docs/history.md):
            the worker tallies its runs and writes them once a second. False
            writes none; `get_history` and the web view's charts then show
            only the runs of workers that keep it.
    """

    client: Settings = field(default_factory=Settings)
    concurrency: int = 8
    grace_period: float = 30.0
    queue_limits: Mapping[str, int] = field(default_factory=dict)
    log_payloads: bool = False
    batch: int | None = None
    take_ahead: bool = True
    health_port: int | None = None
    health_host: str = "127.0.0.1"
    livez_after: float = 5.0
    isolated: bool = False
    max_jobs_per_child: int | None = None
    max_memory_per_child: int | None = None
    child_grace: float = 1.0
    history: bool = True

    @property
    def max_blocked(self) -> float:
        """Seconds the worker's event loop may stay blocked while its lease is
        kept: `Settings.max_blocked` of ``client`` (the lease is the client's)."""
        return self.client.max_blocked

    def __post_init__(self) -> None:
        if not isinstance(self.client, Settings):
            raise TypeError("client must be a worqr.Settings")
        count("concurrency", self.concurrency, low=1)
        seconds("grace_period", self.grace_period)
        limits = dict(self.queue_limits)
        for queue, limit in limits.items():
            validate_name(queue)
            count(f"queue limit of {queue!r}", limit, low=1)
        object.__setattr__(self, "queue_limits", MappingProxyType(limits))
        optional_count("batch", self.batch, low=1)
        flag("take_ahead", self.take_ahead)
        flag("log_payloads", self.log_payloads)
        optional_count("health_port", self.health_port, high=65535)
        if not isinstance(self.health_host, str) or not self.health_host:
            raise TypeError("health_host must be a non-empty str")
        seconds("livez_after", self.livez_after, above=True)
        flag("isolated", self.isolated)
        optional_count("max_jobs_per_child", self.max_jobs_per_child, low=1)
        optional_count("max_memory_per_child", self.max_memory_per_child, low=1, high=2**53)
        seconds("child_grace", self.child_grace)
        flag("history", self.history)
        if self.health_port is not None and self.livez_after >= self.max_blocked:
            raise ValueError(
                f"livez_after ({self.livez_after:g}) must be shorter than max_blocked "
                f"({self.max_blocked:g}): past max_blocked peers fail the worker anyway"
            )
