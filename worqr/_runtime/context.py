"""What a running handler can know about its process, and how it asks for a retry."""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass, field

from .._errors import WorqrError
from .._process import Process


class Retry(Exception):
    """Raise from a handler to put its task back at the front of its queue."""


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
    cancelled: threading.Event = field(default_factory=threading.Event)

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
