"""The worker's side of isolation: a pool of handler children it owns.

`ChildPool.start` starts ``size`` children ahead (one per concurrency slot)
and a spare, so that a job never waits for an interpreter to boot, not even
right after a child was replaced. `ChildPool.run` sends a
process to an idle child and waits for its answer, passing progress on. When
the task running it is cancelled (a timeout, a cancel, a lost lease, the end
of a grace period), the child is stopped, SIGTERM then SIGKILL after
``grace`` seconds, and only then does the cancellation go on: the runtime
settles the attempt after its handler's task ended, so a retry never starts
beside a child still running. A child that died, was stopped, ran
``max_jobs`` jobs or grew past ``max_memory`` bytes is replaced in the
background.

Children are fresh interpreters (``python -m worqr._runtime.isolation.child``), never
forks of the worker: a fork of a process with threads (the worker's lanes,
Redis connections, the lease thread) may inherit a lock held by another thread
and hang. Their cost is paid once, ahead, and again only when one is replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

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


class Reports(NamedTuple):
    """Where a job's progress values and log lines from its child go (a task's
    handler has neither: both drop them)."""

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
    """One child process and its pipes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.jobs = 0
        self.rss = 0
        self.broken = False  # stopped or died: never given another job
        self._log = asyncio.ensure_future(_log_lines(process))

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def start(cls, targets: dict[str, Target], *, memory: bool = False) -> HandlerChild:
        """A child that imported ``targets``; ``memory``: it reports its resident
        memory after each job (for ``max_memory``)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "worqr._runtime.isolation.child",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        child = cls(process)
        try:
            await child.boot(targets, memory)
        except BaseException:
            await child.stop(0.0)
            raise
        return child

    async def boot(self, targets: dict[str, Target], memory: bool) -> None:
        """Send the child its handlers to import; returns once it is ready."""
        self._send({"t": "boot", "path": sys.path, "targets": targets, "memory": memory})
        await self._drain()
        ready = await frames.read_async(self._stdout)
        if ready is None:
            death = death_of(await self.process.wait())
            await self._log
            raise ChildBootError(
                f"an isolated handler's child could not start: {death} (see the log)"
            )
        self.rss = int(ready[0].get("rss", 0))

    @property
    def _stdout(self) -> asyncio.StreamReader:
        assert self.process.stdout is not None
        return self.process.stdout

    def _send(self, header: dict[str, Any], body: bytes = b"") -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frames.pack(header, body))

    async def _drain(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.drain()

    async def run(self, handler: str, process: Process, reports: Reports) -> Any:
        """Run ``process`` with ``handler`` (a queue's name); the handler's return
        value, or what it raised. Its progress values and job log lines go to
        ``reports`` as they come."""
        try:
            self._send(
                {"t": "run", "handler": handler, "process": process_header(process)}, process.data
            )
            await self._drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # it died: its end is read below
        while True:
            frame = await frames.read_async(self._stdout)
            if frame is None:
                self.broken = True
                raise death_of(await self.process.wait())
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

    async def stop(self, grace: float) -> None:
        """SIGTERM (the handler unwinds), then SIGKILL after ``grace`` seconds;
        returns once the child is gone."""
        self.broken = True
        if self.process.returncode is None:
            try:
                self.process.send_signal(signal.SIGTERM)
                await asyncio.wait_for(self.process.wait(), grace)
            except (TimeoutError, ProcessLookupError):
                if self.process.returncode is None:
                    self.process.kill()
        await self.process.wait()
        await asyncio.wait({self._log}, timeout=1.0)

    async def close(self, grace: float) -> None:
        """Let an idle child exit on its own (its input ends), else stop it."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.process.wait()), grace)
        await self.stop(grace)


async def _log_lines(process: asyncio.subprocess.Process) -> None:
    """What a child writes (its handlers' prints, tracebacks) goes to the log."""
    assert process.stderr is not None
    while line := await process.stderr.readline():
        logger.info("child %d: %s", process.pid, line.decode("utf-8", "replace").rstrip())


class ChildPool:
    """``settings.size`` handler children, started ahead and replaced as they go."""

    def __init__(self, targets: dict[str, Target], settings: PoolSettings) -> None:
        self.targets = targets
        self.settings = settings
        self._idle: list[HandlerChild] = []
        self._waiters: deque[asyncio.Future[HandlerChild]] = deque()
        self._busy: set[HandlerChild] = set()
        self._replacing: set[asyncio.Task[None]] = set()  # starting replacements
        self._retiring: set[asyncio.Task[None]] = set()  # worn children closing
        self._closed = False
        self.replaced = 0  # children replaced so far (died, stopped or recycled)

    @property
    def pids(self) -> list[int]:
        """The children's process ids, idle and busy (the tests' view)."""
        return [child.pid for child in (*self._idle, *self._busy)]

    async def start(self) -> None:
        started = await asyncio.gather(
            *(self._start_one() for _ in range(self.settings.size + SPARE_CHILDREN)),
            return_exceptions=True,
        )
        children = [each for each in started if isinstance(each, HandlerChild)]
        failed = [each for each in started if isinstance(each, BaseException)]
        if failed:
            await asyncio.gather(*(child.stop(0.0) for child in children))
            raise failed[0]
        self._idle.extend(children)

    def _start_one(self) -> Awaitable[HandlerChild]:
        return HandlerChild.start(self.targets, memory=self.settings.max_memory is not None)

    async def run(self, handler: str, process: Process, reports: Reports) -> Any:
        child = await self._acquire()
        try:
            return await child.run(handler, process, reports)
        except asyncio.CancelledError:
            await _uncancellable(child.stop(self.settings.grace))
            raise
        finally:
            self._release(child)

    async def _acquire(self) -> HandlerChild:
        if self._closed:
            raise WorqrError("the worker's handler children are closed")
        if self._idle:
            child = self._idle.pop()
        else:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                child = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._give(waiter.result())  # handed over as this task was cancelled
                raise
        self._busy.add(child)
        return child

    def _release(self, child: HandlerChild) -> None:
        self._busy.discard(child)
        settings = self.settings
        worn = (settings.max_jobs is not None and child.jobs >= settings.max_jobs) or (
            settings.max_memory is not None and child.rss > settings.max_memory
        )
        if child.broken or worn or child.process.returncode is not None:
            self.replaced += 1
            if worn:
                self._background(self._retiring, child.close(settings.grace))
                logger.info(
                    "child %d replaced after %d jobs (%d bytes resident)",
                    child.pid,
                    child.jobs,
                    child.rss,
                )
            self._background(self._replacing, self._replace())
            return
        self._give(child)

    def _give(self, child: HandlerChild) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(child)
                return
        self._idle.append(child)

    async def _replace(self) -> None:
        while not self._closed:
            try:
                child = await HandlerChild.start(
                    self.targets, memory=self.settings.max_memory is not None
                )
            except ChildBootError as error:
                logger.error("%s; trying again in %g s", error, REPLACE_BACKOFF)
                await asyncio.sleep(REPLACE_BACKOFF)
                continue
            if self._closed:
                await child.close(self.settings.grace)
            else:
                self._give(child)
            return

    @staticmethod
    def _background(tasks: set[asyncio.Task[None]], work: Any) -> None:
        task = asyncio.ensure_future(work)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def close(self) -> None:
        """Stop every child (the worker's handlers have ended by now)."""
        self._closed = True
        for task in list(self._replacing):
            task.cancel()  # a child it started meanwhile is stopped by its start
        await asyncio.gather(*self._replacing, *self._retiring, return_exceptions=True)
        children, self._idle = [*self._idle, *self._busy], []
        await asyncio.gather(*(child.close(self.settings.grace) for child in children))


async def _uncancellable(work: Any) -> None:
    """Await ``work`` to its end even if the awaiting task is cancelled again
    (a child must be gone before its job's outcome is settled)."""
    task = asyncio.ensure_future(work)
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            continue
