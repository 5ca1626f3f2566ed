"""The worker's side of isolation: a pool of handler children it owns.

`ChildPool.start` starts ``size`` children ahead (one per concurrency slot)
and a spare, so that a job never waits for an interpreter to boot, not even
right after a child was replaced. `ChildPool.run` sends a process to an idle
child and waits for its answer, passing progress on. It blocks: a lane runs
it on its own thread, as it runs an in-process sync handler, and the event
loop on a handler thread. A pipe's round trip on a thread costs the worker a
write and a read, which is what makes an isolated job cheap; the loop's
transports cost a task, a future and a callback more per job.

A run is stopped (a timeout, a cancel, a lost lease, the end of a grace
period) through its `Halt`: its child gets SIGTERM, then SIGKILL after
``grace`` seconds, and the run ends once the child is gone (the pipe's end
is read and the child reaped). The runtime settles the attempt after that, so
a retry never starts beside a child still running. A child that died, was
stopped, ran ``max_jobs`` jobs or grew past ``max_memory`` bytes is replaced
on a thread of its own.

Children are fresh interpreters (``python -m worqr._runtime.isolation.child``),
never forks of the worker: a fork of a process with threads (the worker's
lanes, Redis connections, the lease thread) may inherit a lock held by
another thread and hang. Their cost is paid once, ahead, and again only when
one is replaced.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, NamedTuple

from ..._errors import WorqrError
from ..._process import Process
from . import frames
from .outcomes import death_of, error_of, value_of
from .targets import Target
from .wire import process_header

logger = logging.getLogger("worqr.child")

SPARE_CHILDREN = 1
"""Children started beyond one per slot: a job that comes while a stopped or
worn child's replacement boots takes the spare instead of waiting for it (and
its timeout does not run out meanwhile)."""

REPLACE_BACKOFF = 1.0
"""Seconds between tries to start a replacement that failed to boot."""

WAIT_CHECK_SECONDS = 0.1
"""While a run waits for a child (none idle: replacements boot), how often it
looks whether it was halted meanwhile."""

LOG_JOIN_SECONDS = 1.0
"""How long a stopped child's last output may take to reach the log."""


class Reports(NamedTuple):
    """Where a job's progress values and log lines from its child go, from the
    running thread (a task's handler has neither: both drop them)."""

    progress: Callable[[bytes], object]
    log: Callable[[bytes], object]


class ChildBootError(WorqrError):
    """A handler child could not start (its handlers could not be imported):
    a mistake in the application, not an outage; the worker does not start."""


@dataclass(frozen=True, slots=True)
class PoolSettings:
    size: int
    grace: float
    max_jobs: int | None = None
    max_memory: int | None = None  # bytes of resident memory, checked between jobs


class HandlerChild:
    """One child process and its pipes. One thread at a time runs a job on it;
    `terminate` may come from any thread."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.jobs = 0
        self.rss = 0
        self.broken = False  # stopped or died: never given another job
        self._log = threading.Thread(
            target=_log_lines, args=(process,), name=f"worqr-child-{process.pid}", daemon=True
        )
        self._log.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    def spawn(cls) -> HandlerChild:
        """A child process, not booted yet (`boot`)."""
        process = subprocess.Popen(
            [sys.executable, "-m", "worqr._runtime.isolation.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        return cls(process)

    @classmethod
    def start(cls, targets: dict[str, Target], *, memory: bool) -> HandlerChild:
        """A child that imported ``targets``; ``memory``: it reports its resident
        memory after each job (for ``max_memory``)."""
        child = cls.spawn()
        try:
            child.boot(targets, memory)
            child.ready()
        except BaseException:
            child.stop(0.0)
            raise
        return child

    def boot(self, targets: dict[str, Target], memory: bool) -> None:
        """Send the child its handlers to import (`ready` waits for it)."""
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it died:
            self._send(  # `ready` says how
                {"t": "boot", "path": sys.path, "targets": targets, "memory": memory}
            )

    def ready(self) -> None:
        """Return once the child imported its handlers; `ChildBootError` when it
        could not (it exited)."""
        ready = frames.read(self._stdout)
        if ready is None:
            death = death_of(self.process.wait())
            self._log.join()
            raise ChildBootError(
                f"an isolated handler's child could not start: {death} (see the log)"
            )
        self.rss = int(ready[0].get("rss", 0))

    @property
    def _stdout(self) -> IO[bytes]:
        assert self.process.stdout is not None
        return self.process.stdout

    def _send(self, header: dict[str, Any], body: bytes = b"") -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(frames.pack(header, body))
        stdin.flush()

    def run(self, handler: str, process: Process, reports: Reports) -> Any:
        """Run ``process`` with ``handler`` (a queue's name); the handler's return
        value, or what it raised (`ChildDiedError` when the child ended in the
        middle). Its progress values and job log lines go to ``reports`` as they
        come."""
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it died:
            self._send(  # its end is read below
                {"t": "run", "handler": handler, "process": process_header(process)}, process.data
            )
        while True:
            frame = frames.read(self._stdout)
            if frame is None:
                self.broken = True
                raise death_of(self.process.wait())
            header, body = frame
            kind = header["t"]
            if kind == "progress":
                reports.progress(body)
                continue
            if kind == "job_log":
                reports.log(body)
                continue
            self.jobs += 1
            self.rss = int(header.get("rss", 0))
            if kind == "done":
                return value_of(header, body)
            raise error_of(header)

    def terminate(self, grace: float) -> None:
        """SIGTERM now (the handler unwinds), SIGKILL in ``grace`` seconds if it
        still runs; returns at once (any thread)."""
        self.broken = True
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)  # nothing once it was reaped
        kill = threading.Timer(grace, self._kill)
        kill.daemon = True
        kill.start()

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            if self.process.poll() is None:
                self.process.kill()

    def stop(self, grace: float) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; returns once the child
        is gone."""
        self.broken = True
        if self.process.poll() is None:
            self.terminate(grace)
        self.process.wait()
        self._close_pipes()
        self._log.join(LOG_JOIN_SECONDS)

    def end_input(self) -> None:
        """Close the child's input: an idle child exits on its own."""
        stdin = self.process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()

    def close(self, grace: float, deadline: float | None = None) -> None:
        """Let an idle child exit on its own (its input ends) within ``grace``
        seconds (or by the monotonic ``deadline``), else stop it."""
        self.end_input()
        wait = grace if deadline is None else max(0.0, deadline - time.monotonic())
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(wait)
        self.stop(grace)

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def _log_lines(process: subprocess.Popen[bytes]) -> None:
    """What a child writes (its handlers' prints, tracebacks) goes to the log."""
    stderr = process.stderr
    assert stderr is not None
    with stderr:
        for line in stderr:
            logger.info("child %d: %s", process.pid, line.decode("utf-8", "replace").rstrip())


class Halt:
    """How one run's child is stopped, from any thread (`Running.stop`).

    The run attaches its child before it sends the job and detaches it before
    the child goes back to the pool, under one lock with `halt`: a halt reaches
    the child only while it runs this job, and a halt that comes before the
    job is sent keeps it from being sent."""

    __slots__ = ("_child", "_grace", "_halted", "_lock")

    def __init__(self, grace: float) -> None:
        self._grace = grace
        self._lock = threading.Lock()
        self._child: HandlerChild | None = None
        self._halted = False

    def halt(self) -> None:
        with self._lock:
            self._halted = True
            if self._child is not None:
                self._child.terminate(self._grace)

    def attach(self, child: HandlerChild) -> bool:
        """False when the run was halted already (its job must not be sent)."""
        with self._lock:
            if self._halted:
                return False
            self._child = child
            return True

    @property
    def halted(self) -> bool:
        return self._halted

    def detach(self) -> None:
        with self._lock:
            self._child = None


class HaltedBeforeStartError(Exception):
    """The run was stopped before its job reached a child (its outcome is the
    stop's: a cancel, a timeout, a lost lease)."""


class ChildPool:
    """``settings.size`` handler children, started ahead and replaced as they go.
    Every method blocks; any thread may call them."""

    def __init__(self, targets: dict[str, Target], settings: PoolSettings) -> None:
        self.targets = targets
        self.settings = settings
        self._changed = threading.Condition()  # guards the fields below
        self._idle: list[HandlerChild] = []
        self._busy: set[HandlerChild] = set()
        self._background: set[threading.Thread] = set()  # replacing or retiring children
        self._closed = False
        self.replaced = 0  # children replaced so far (died, stopped or recycled)

    @property
    def pids(self) -> list[int]:
        """The children's process ids, idle and busy (the tests' view)."""
        with self._changed:
            return [child.pid for child in (*self._idle, *self._busy)]

    def halt(self) -> Halt:
        """A new run's halt (`run`)."""
        return Halt(self.settings.grace)

    def start(self) -> None:
        """Start the children; they boot side by side."""
        memory = self.settings.max_memory is not None
        children: list[HandlerChild] = []
        try:
            for _ in range(self.settings.size + SPARE_CHILDREN):
                children.append(HandlerChild.spawn())
            for child in children:
                child.boot(self.targets, memory)
            for child in children:  # they import side by side
                child.ready()
        except BaseException:
            for child in children:
                child.stop(0.0)
            raise
        self._keep(children)

    def _keep(self, children: list[HandlerChild]) -> None:
        """Booted children join the idle ones; they close instead when the
        pool closed while they booted (the worker stopped)."""
        with self._changed:
            if not self._closed:
                self._idle.extend(children)
                self._changed.notify_all()
                return
        for child in children:
            child.close(self.settings.grace)

    def run(self, handler: str, process: Process, reports: Reports, halt: Halt) -> Any:
        """Run ``process`` on an idle child (waiting for one if none is);
        ``halt`` stops it (`HaltedBeforeStartError` when it came first)."""
        child = self._acquire(halt)
        try:
            if not halt.attach(child):
                raise HaltedBeforeStartError("the handler was stopped before it started")
            try:
                return child.run(handler, process, reports)
            finally:
                halt.detach()
                if child.broken:  # halted: gone before the attempt is settled
                    child.stop(self.settings.grace)
        finally:
            self._release(child)

    def _acquire(self, halt: Halt) -> HandlerChild:
        with self._changed:
            while not self._idle:
                if self._closed:
                    raise WorqrError("the worker's handler children are closed")
                if halt.halted:
                    raise HaltedBeforeStartError("the handler was stopped before it started")
                self._changed.wait(WAIT_CHECK_SECONDS)
            if self._closed:
                raise WorqrError("the worker's handler children are closed")
            child = self._idle.pop()
            self._busy.add(child)
            return child

    def _release(self, child: HandlerChild) -> None:
        settings = self.settings
        worn = (settings.max_jobs is not None and child.jobs >= settings.max_jobs) or (
            settings.max_memory is not None and child.rss > settings.max_memory
        )
        with self._changed:
            self._busy.discard(child)
            if not (child.broken or worn or child.process.returncode is not None):
                self._idle.append(child)
                self._changed.notify()
                return
            self.replaced += 1
            if worn:
                logger.info(
                    "child %d replaced after %d jobs (%d bytes resident)",
                    child.pid,
                    child.jobs,
                    child.rss,
                )
            # A broken child was stopped by its run already; a worn one exits
            # once its input ends, beside its replacement's boot.
            self._in_background(child if worn else None)

    def _in_background(self, retiring: HandlerChild | None) -> None:
        """Close ``retiring`` (if any), then start a replacement, on a thread of
        its own; the caller holds ``_changed``."""
        if self._closed:
            return
        thread = threading.Thread(target=self._replace, args=(retiring,), name="worqr-child-start")
        self._background.add(thread)
        thread.start()

    def _replace(self, retiring: HandlerChild | None) -> None:
        try:
            if retiring is not None:
                retiring.close(self.settings.grace)
            memory = self.settings.max_memory is not None
            while not self._closed:
                try:
                    child = HandlerChild.start(self.targets, memory=memory)
                except ChildBootError as error:
                    logger.error("%s; trying again in %g s", error, REPLACE_BACKOFF)
                    time.sleep(REPLACE_BACKOFF)
                    continue
                self._keep([child])
                return
        finally:
            with self._changed:
                self._background.discard(threading.current_thread())

    def close(self) -> None:
        """Stop every child (the worker's handlers have ended by now)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            background = list(self._background)
            children, self._idle = [*self._idle, *self._busy], []
        for thread in background:
            thread.join()
        grace = self.settings.grace
        for child in children:
            child.end_input()  # all at once: they exit side by side
        deadline = time.monotonic() + grace
        for child in children:
            child.close(grace, deadline)
