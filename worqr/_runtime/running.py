"""One process in flight: how its handler is launched and stopped, and what its
end means (the outcome policy, decided here without I/O; `Worker` acts on it)."""

from __future__ import annotations

import asyncio
import contextvars
import enum
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .._clients.lease import HANDLER_TASK_PREFIX
from .._jobs import Backoff
from .._process import Process
from .._tracing import enter_run
from .context import ProcessContext, Retry, current_process, set_current
from .isolation.pool import Halt, Reports
from .job_context import Fail, JobContext, set_current_job
from .threads import HandlerThreads

if TYPE_CHECKING:
    from .isolation.pool import ChildPool

Handler = Callable[[Any], Any]
Reason = Literal["cancel", "lease", "stale", "shutdown", "timeout"]
"""Why the worker stopped a handler: its process was cancelled (or vanished), the
worker lost its lease (a peer owns the task now), its lease went stale (no
heartbeat landed for most of the TTL: peers may take the task soon), the
worker is shutting down, or a job ran past its timeout."""


def is_async_handler(function: Handler) -> bool:
    """``async def`` functions, partials of them, and objects with ``async def __call__``."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004 - the method, not callable()
    )


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    """A registered handler. ``jobs``: of a job queue (`Worker.job`), with the
    handler's own defaults for its jobs (None: the job's, else `JobSettings`)."""

    queue: str
    function: Handler
    persistent: bool
    is_async: bool
    jobs: bool = False
    retries: int | None = None
    backoff: Backoff | float | None = None
    timeout: float | None = None
    isolated: bool = False  # runs in a child process of the worker's pool (`isolation.pool`)

    @property
    def task_name(self) -> str:
        """The name of the asyncio task that runs one process (an async handler)."""
        function = getattr(self.function, "func", self.function)  # a partial's function
        module = getattr(function, "__module__", None) or "?"
        name = getattr(function, "__qualname__", None) or type(function).__qualname__
        return f"{HANDLER_TASK_PREFIX}of queue {self.queue!r} ({module}.{name})"


class Outcome(enum.Enum):
    FINISHED = "finished"  # returned: finish the process
    FAILED = "failed"  # raised: dead-letter the task (a job: a failure, maybe retried)
    RETRIED = "retried"  # raised worqr.Retry: back to the front (a job: a failure)
    RETURNED = "returned"  # its lease went stale: back to the front, no failure counted
    FAILED_NOW = "failed_now"  # raised worqr.Fail (jobs): failed, no retry
    TIMED_OUT = "timed_out"  # ran past its job's timeout: a failure
    CANCELLED = "cancelled"  # its process was cancelled or vanished: nothing to return
    LEASE_LOST = "lease_lost"  # a peer owns the task now: leave it alone
    SHUTDOWN = "shutdown"  # stopped by a shutdown: deregistering returns the task


class HandlerOutcome(Protocol):
    """How a handler's end is read: an asyncio future (a task, or a handler
    thread's future), or a lane's `HandlerEnd`."""

    def done(self) -> bool: ...
    def cancelled(self) -> bool: ...
    def cancel(self) -> bool: ...
    def exception(self) -> BaseException | None: ...
    def result(self) -> Any: ...


class HandlerEnd:
    """A sync handler's end as a lane sets it: a done future's reading, without
    the loop (set once, from the lane's thread)."""

    __slots__ = ("_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None

    def returned(self, value: Any) -> None:
        self._value, self._done = value, True

    def raised(self, error: BaseException) -> None:
        self._error, self._done = error, True

    def done(self) -> bool:
        return self._done

    def cancelled(self) -> bool:
        return False  # a thread cannot be cancelled

    def cancel(self) -> bool:
        return False

    def exception(self) -> BaseException | None:
        return self._error

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


@dataclass(slots=True)
class Running:
    process: Process
    spec: HandlerSpec
    context: ProcessContext
    inner: HandlerOutcome | None = None  # the handler's task, thread future or lane end
    reason: Reason | None = None
    started: float = field(default_factory=time.monotonic)
    settled: bool = False  # acknowledged before its handler ended (a sync job's timeout)
    job: JobContext | None = None  # set for a job's process
    deadline: asyncio.TimerHandle | None = None  # a job's timeout
    progressed: bool = False  # a lane's job reported progress: its end goes through the loop
    halt: Halt | None = None  # an isolated run's: stops its child

    def stop(self, reason: Reason) -> bool:
        """Ask the handler to stop. A handler that already ended keeps its own
        outcome (a task that finished just before a shutdown is not run twice)."""
        if self.reason is not None or self.inner is None or self.inner.done():
            return False
        self.reason = reason
        self.context.cancelled.set()
        if self.halt is not None:  # its child is stopped; the run ends once it is gone
            self.halt.halt()
        elif self.spec.is_async:
            _cancel_until_done(self.inner)
        return True

    def seconds(self) -> float:
        return time.monotonic() - self.started

    def outcome(self) -> tuple[Outcome, BaseException | None]:
        """What the ended handler's result means, and the error to log if it failed."""
        inner = self.inner
        assert inner is not None and inner.done()
        error = None if inner.cancelled() else inner.exception()  # always retrieved
        if self.reason == "lease":
            return Outcome.LEASE_LOST, None
        if self.reason == "shutdown":
            return Outcome.SHUTDOWN, None
        if self.reason == "stale":  # back to the front, unless a peer has it by now
            return Outcome.RETURNED, None
        if self.reason == "cancel":
            return Outcome.CANCELLED, None
        if self.reason == "timeout":
            return Outcome.TIMED_OUT, None
        if inner.cancelled():
            # Not cancelled by the worker: something in the handler cancelled it.
            return Outcome.FAILED, asyncio.CancelledError("the handler's task was cancelled")
        if error is None:
            return Outcome.FINISHED, None
        if isinstance(error, Retry):
            return Outcome.RETRIED, error
        if isinstance(error, Fail):
            return Outcome.FAILED_NOW, error
        return Outcome.FAILED, error


RECANCEL_INTERVAL = 1.0
"""Seconds between the cancels of a stopped async handler that has not ended."""


def _cancel_until_done(task: HandlerOutcome) -> None:
    """Cancel an async handler's task, and again each `RECANCEL_INTERVAL` until it
    ends: code that swallows one CancelledError cannot keep a stopped handler
    running. redis-py's asyncio client does, under Python 3.11's ``wait_for``
    (cpython gh-86296, as `honour_cancel` says): a handler cancelled while it
    polls Redis lost about half of them. Cleanup on cancel gets that long."""
    if task.done():
        return
    task.cancel()
    asyncio.get_running_loop().call_later(RECANCEL_INTERVAL, _cancel_until_done, task)


def launch(
    running: Running,
    loop: asyncio.AbstractEventLoop,
    threads: HandlerThreads,
    children: ChildPool | None = None,
) -> asyncio.Future[Any]:
    """Start the handler with `current_process()` set: an asyncio task for an
    async handler, a handler thread for a sync one (in a copy of the context),
    and for an isolated one a handler thread that waits for a child of
    ``children`` (`Running.stop` halts that child)."""
    context = contextvars.copy_context()
    context.run(set_current, running.context)
    if running.job is not None:
        context.run(set_current_job, running.job)
        enter_run(context, running.process.id)  # its span current in the handler (tracing)
    function, task = running.spec.function, running.process.task
    if running.spec.isolated:
        assert children is not None
        halt = running.halt = children.halt()
        reports = child_reports(running.job)
        return threads.submit(
            context.run, children.run, running.spec.queue, running.process, reports, halt
        )
    if running.spec.is_async:
        # Named for the lease thread's report of a blocked loop (no payload in it).
        return loop.create_task(
            _call_async(function, task), context=context, name=running.spec.task_name
        )
    return threads.submit(context.run, call_sync, function, task)


def child_reports(job: JobContext | None) -> Reports:
    """Where an isolated run's progress and log lines go: its job's (thread-safe)."""
    return Reports(job.report, job.write_log) if job else Reports(_dropped, _dropped)


def _dropped(value: bytes) -> None:
    """A task's handler has no progress to report nor log to write (only a job's has)."""


_PLAIN = frozenset({str, bytes, int, float, bool, dict, list, tuple})


async def _call_async(function: Handler, task: str | bytes) -> Any:
    return await function(task)


def call_sync(function: Handler, task: str | bytes) -> Any:
    result = function(task)
    if result is None or type(result) in _PLAIN:  # the common returns, checked cheaply
        return result
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if close is not None:
            close()  # no "coroutine was never awaited" warning on top of the error
        raise TypeError(
            f"the handler of queue {current_process().queue!r} returned an awaitable; "
            "declare it `async def` so the worker awaits it"
        )
    return result
