"""What a running job handler can know about its job, report, and raise."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from .._core.job_logs import log_line
from .._errors import WorqrError
from .._flows import ChildOutcome
from .._jobs import JobProcess

MAX_PROGRESS_BYTES = 4096


class Fail(Exception):
    """Raise from a job handler: the job fails now, without a retry (its error
    reads ``"Fail: <reason>"``)."""


@dataclass(frozen=True, slots=True)
class JobContext:
    """The job a handler is running (`worqr.current_job()`).

    ``cancelled`` is set when the job is cancelled, runs past its timeout, or its
    worker loses its lease or shuts down: a sync handler should check or wait on
    it and return soon (an async one is cancelled too).
    """

    process: JobProcess = field(repr=False)
    cancelled: threading.Event
    report: Callable[[bytes], object] = field(repr=False)
    write_log: Callable[[bytes], object] = field(repr=False)

    @property
    def id(self) -> str:
        """The job's id."""
        return self.process.job_id

    @property
    def queue(self) -> str:
        return self.process.queue

    @property
    def attempt(self) -> int:
        """This attempt's number, from 1 (every start counts, recoveries included)."""
        return self.process.attempt

    def children(self) -> dict[str, str | bytes | None]:
        """A flow parent's children, child id -> result, in submit order: every
        child (policy "fail": they all finished), the finished ones ("ignore"),
        or every child with None for those that did not finish ("continue";
        `child_outcomes` says how each ended). Empty for a job with no children."""
        outcomes = self.process.children or ()
        if self.process.child_policy == "ignore":
            outcomes = tuple(child for child in outcomes if child.state == "finished")
        return {child.id: child.result for child in outcomes}

    def child_outcomes(self) -> list[ChildOutcome]:
        """How each child of a flow parent ended (state, result, error), in submit order."""
        return list(self.process.children or ())

    def progress(self, value: str | bytes) -> None:
        """Report progress (at most 4 KB); the worker sends at most one value per
        100 ms per job, and always the last before the job's outcome.
        `get_job(...).progress` reads it. Thread-safe."""
        if isinstance(value, str):
            data = value.encode("utf-8")
        elif isinstance(value, bytes | bytearray | memoryview):
            data = bytes(value)
        else:
            raise TypeError(f"progress must be str or bytes, not {type(value).__name__}")
        if len(data) > MAX_PROGRESS_BYTES:
            raise ValueError(f"progress is {len(data)} bytes; the limit is {MAX_PROGRESS_BYTES}")
        self.report(data)

    def log(self, line: str) -> None:
        """Append ``line`` to the job's log, which `get_job_log` reads: kept with
        the job's record and gone with it, the newest 1,000 lines and 64 KB at
        most; a line over 16 KB is cut, with a marker saying how much. Sent in
        the background, in order, before the job's outcome; a worker that lost
        the job has its lines dropped. Thread-safe; `TypeError` for a non-str."""
        self.write_log(log_line(line))


_current: ContextVar[JobContext] = ContextVar("worqr_job")


def current_job() -> JobContext:
    """The job of the job handler that calls it."""
    try:
        return _current.get()
    except LookupError:
        raise WorqrError("current_job() called outside a worqr job handler") from None


def set_current_job(context: JobContext) -> None:
    _current.set(context)
