"""What a running handler can know about its process, and how it asks for a retry."""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass, field

from .. import _checks as checks
from .._checks import optional_seconds
from .._errors import WorqrError
from .._process import Process


class Retry(Exception):
    """Raise from a handler to try again.

    In a task queue's handler: the task goes back to the front of its queue.
    In a job queue's handler: a failure, retried per the job's policy (after
    ``delay`` seconds if given, else its backoff) until its retries are used up.
    """

    def __init__(self, delay: float | None = None) -> None:
        optional_seconds("Retry delay", delay)
        super().__init__() if delay is None else super().__init__(f"retry in {delay:g} s")
        self.delay = delay


class RateLimited(Exception):
    """Raise from a job handler when an upstream said "too many requests": the
    job goes back as delayed for ``seconds`` (not a failure: no retry is used up
    and its attempt is given back), and its queue starts no job for that long, on
    any worker (`Worqr.configure_queue` sets standing limits)."""

    def __init__(self, seconds: float) -> None:
        wait = checks.seconds("RateLimited seconds", seconds, above=True)
        super().__init__(f"rate limited for {wait:g} s")
        self.seconds = wait
        self.delay = self.seconds  # the outcome's delay, as for Retry


class CancelEvent(threading.Event):
    """A `threading.Event` whose condition uses an `RLock`: one is made for every
    process a worker starts, and ``Condition(Lock())`` probes the lock for three
    methods a `Lock` lacks (a caught AttributeError each), which an `RLock` has.
    Half the cost per process; waiting and setting behave the same."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.RLock())
        self._flag = False


@dataclass(frozen=True, slots=True)
class ProcessContext:
    """The process a handler is running.

    ``cancelled`` is set when the task is cancelled (or its process vanished),
    when this worker loses its lease (a peer now owns the task), and when the
    worker shuts down: at once for persistent handlers, after the grace period
    for the others. Sync handlers should check or wait on it and return soon;
    async handlers are cancelled as well.
    """

    process: Process
    cancelled: threading.Event = field(default_factory=CancelEvent)

    @property
    def id(self) -> str:
        return self.process.id

    @property
    def queue(self) -> str:
        return self.process.queue

    @property
    def task(self) -> str | bytes:
        return self.process.task

    @property
    def worker_id(self) -> str:
        return self.process.worker_id


_current: ContextVar[ProcessContext] = ContextVar("worqr_process")


def current_process() -> ProcessContext:
    """The process of the handler that calls it."""
    try:
        return _current.get()
    except LookupError:
        raise WorqrError("current_process() called outside a worqr handler") from None


def set_current(context: ProcessContext) -> None:
    _current.set(context)
