"""Client settings, grouped in one frozen, validated dataclass."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ._checks import count, flag, seconds
from ._jobs import JobSettings
from ._keys import validate_name

T = TypeVar("T")


def with_overrides(settings: T, **overrides: Any) -> T:
    """``settings`` with every override that is not None (validated again)."""
    given = {name: value for name, value in overrides.items() if value is not None}
    return dataclasses.replace(settings, **given) if given else settings  # type: ignore[type-var]


@dataclass(frozen=True, slots=True)
class Settings:
    """How one worqr client behaves. Every worker of a mesh should share
    `prefix`; the timing values may differ per worker.

    Attributes:
        prefix: namespace of every key; several meshes can share one Redis.
        ttl: seconds a worker stays alive without a heartbeat.
        heartbeat: seconds between heartbeats (and between reaping turns of the mesh).
        max_recoveries: failovers a task survives before it is dead-lettered.
        poll_interval: seconds between fallback polls of each worked queue, in case
            a pub/sub wake-up was lost.
        socket_timeout: seconds a Redis command may take before it is ambiguous.
        retry_deadline: seconds to keep retrying a command while Redis is unreachable.
        max_task_bytes: largest accepted task, in bytes.
        failed_max: length the dead-letter list of each queue is trimmed to.
        requeue_chunk: processes returned per script call when failing a worker.
        decode_tasks: return tasks that are valid UTF-8 as ``str`` (else ``bytes``).
        wait_replicas: opt-in durability for enqueues: after each enqueue call, wait
            (Redis ``WAIT``) until this many replicas hold it, or raise
            `ReplicationTimeoutError` (the tasks are then enqueued on the master but
            may be lost if it fails now). 0, the default, does not wait.
        wait_timeout: seconds an enqueue waits for ``wait_replicas`` acknowledgements.
        jobs: the job layer's defaults, retention and budgets (`JobSettings`).
        max_blocked: seconds an `AsyncWorqr`'s event loop may make no progress
            (blocked by a handler or callback) while its lease thread keeps the
            lease; past it the lease is let go, so peers fail the worker and run
            its tasks elsewhere.
    """

    prefix: str = "worqr"
    ttl: float = 3.0
    heartbeat: float = 1.0
    max_recoveries: int = 5
    poll_interval: float = 5.0
    socket_timeout: float = 10.0
    retry_deadline: float = 10.0
    max_task_bytes: int = 256 * 1024 * 1024
    failed_max: int = 10_000
    requeue_chunk: int = 200  # ~1-4 ms of script per chunk; 500 took up to ~9 ms
    decode_tasks: bool = True
    wait_replicas: int = 0
    wait_timeout: float = 1.0
    max_blocked: float = 60.0
    jobs: JobSettings = field(default_factory=JobSettings)

    def __post_init__(self) -> None:
        validate_name(self.prefix, "prefix")
        for name in (
            "ttl",
            "heartbeat",
            "poll_interval",
            "socket_timeout",
            "retry_deadline",
            "max_blocked",
        ):
            seconds(name, getattr(self, name), above=True)
        for name in ("max_task_bytes", "failed_max", "requeue_chunk"):
            count(name, getattr(self, name), low=1)
        count("max_recoveries", self.max_recoveries)
        count("wait_replicas", self.wait_replicas)
        seconds("wait_timeout", self.wait_timeout, above=True)
        flag("decode_tasks", self.decode_tasks)
        if self.wait_replicas and self.wait_timeout >= self.socket_timeout:
            raise ValueError(
                f"wait_timeout ({self.wait_timeout}) must be shorter than socket_timeout "
                f"({self.socket_timeout}), or the wait would end as an ambiguous timeout"
            )
        if not isinstance(self.jobs, JobSettings):
            raise TypeError(f"jobs must be a worqr.JobSettings, not {type(self.jobs).__name__}")
        if self.heartbeat >= self.ttl:
            raise ValueError(
                f"heartbeat ({self.heartbeat}) must be shorter than ttl ({self.ttl}), "
                "or every worker would expire between its own heartbeats"
            )

    @property
    def ttl_ms(self) -> int:
        return max(1, round(self.ttl * 1000))

    @property
    def wait_timeout_ms(self) -> int:
        return max(1, round(self.wait_timeout * 1000))  # WAIT 0 would wait forever

    @property
    def heartbeat_ms(self) -> int:
        return max(1, round(self.heartbeat * 1000))
