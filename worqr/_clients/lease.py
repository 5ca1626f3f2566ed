"""The lease of an `AsyncWorqr`, kept by a thread of its own.

A heartbeat that runs as a task on the event loop stops when user code blocks
the loop (a blocking call in an ``async def`` handler), and peers would fail a
worker that is alive, only slow: its tasks would run twice. So the lease is
renewed from a thread, with its own Redis connection, every ``heartbeat``
seconds; the thread also takes the mesh's reaper turn and reaps (mesh duty that
needs none of the loop's state). What needs the client's own state (recovering
a lost lease, reconciling) is handed to the loop.

The thread also watches the loop: it posts a ping and measures how long the
loop takes to run it. A loop that made no progress for more than a second is
reported once (which task was running on it: for a `Worker`, the handler's
queue and function, never the payload) and again, with the total, when it runs.
A loop blocked for more than `Settings.max_blocked` seconds would hold its
tasks forever: the thread stops renewing, so peers fail the worker and run its
tasks elsewhere, and the worker re-registers once its loop returns.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from .._core import Core
from .._core.calls import Plan
from .._hooks import Hooks
from .outage import OutageLog
from .sync_exec import SyncExecutor

logger = logging.getLogger("worqr")

REPORT_AFTER = 1.0
"""Seconds without loop progress before the block is reported."""

HANDLER_TASK_PREFIX = "worqr handler "
"""Task names of handlers start with this (see `worqr._runtime.running`)."""


class LoopWatch(NamedTuple):
    """What the lease thread's watch knows of the loop at one moment."""

    blocked: float  # seconds the loop has not answered a ping (0: it has)
    culprit: str  # what was running on the loop meanwhile ("" when not blocked)
    last_ran: float | None  # when it last answered one, while a ping waits (None: none waits)


def describe_task(task: asyncio.Task[object] | None) -> str:
    """What was running on the loop, for a log line: a handler by its queue and
    function, another task by its name and coroutine. Never a payload."""
    if task is None:
        return "a callback outside any task"
    name = task.get_name()
    if name.startswith(HANDLER_TASK_PREFIX):
        return "the handler " + name[len(HANDLER_TASK_PREFIX) :]
    coroutine = task.get_coro()
    where = getattr(coroutine, "__qualname__", type(coroutine).__name__)
    return f"task {name!r} ({where})"


class LeaseThread:
    """Renews ``core``'s lease through ``executor`` (a sync client of its own)
    while watching ``loop``. ``followup(worker, reply)`` is called on the loop
    when a renewal leaves work for it (a lost lease, a reconcile due)."""

    def __init__(
        self,
        core: Core,
        executor: SyncExecutor,
        loop: asyncio.AbstractEventLoop,
        followup: Callable[[str, int], object],
        hooks: Hooks,
    ) -> None:
        self.core = core
        self.executor = executor
        self.loop = loop
        self.hooks = hooks
        self._followup = followup
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worqr-lease", daemon=True)
        self._ping_sent: float | None = None  # an unanswered ping to the loop, when sent
        self._last_ran = time.monotonic()  # when the loop last answered a ping
        self._culprit: str | None = None  # what blocks the loop, once reported
        self._let_go = False  # stopped renewing: the loop is blocked past max_blocked

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to stop (it ends within a tick, or after a call in flight)."""
        self._stop.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def blocked(self, now: float) -> LoopWatch:
        """How long the loop has not answered the thread's ping, for the health
        probes, from any thread."""
        sent = self._ping_sent
        if sent is None:
            return LoopWatch(0.0, "", None)
        task = describe_task(asyncio.current_task(self.loop))
        return LoopWatch(max(0.0, now - sent), task, self._last_ran)

    # -- in the thread -----------------------------------------------------------

    def _run(self) -> None:
        settings = self.core.state.settings
        tick = min(0.25, settings.heartbeat / 4)
        outage = OutageLog("heartbeat", self.hooks)
        next_beat = time.monotonic() + settings.heartbeat
        while not self._stop.wait(tick):
            now = time.monotonic()
            blocked = self._watch(now)
            if now < next_beat:
                continue
            next_beat = now + settings.heartbeat
            if blocked > settings.max_blocked:
                self._give_up(blocked)
                continue
            try:
                self._beat()
                outage.ok()
            except Exception as error:
                self.hooks.on_heartbeat_failed(type(error).__name__)
                outage.failed(error)
                next_beat = time.monotonic() + outage.backoff()

    def _beat(self) -> None:
        """One renewal (and a reap, when this worker took the turn)."""
        core = self.core
        renewal = self.executor.drive(core.liveness.renew(), deadline=0)
        if renewal is None:
            return  # deregistering
        worker, reply = renewal
        if reply == 1:
            self.executor.drive(core.liveness.reap(), deadline=0)
        if reply == -1 or core.liveness.reconcile_due():
            self.loop.call_soon_threadsafe(self._followup, worker, reply)

    def _watch(self, now: float) -> float:
        """Ping the loop; returns how long it has not answered (0: it has)."""
        sent = self._ping_sent
        if sent is None:
            self._ping_sent = now
            try:
                self.loop.call_soon_threadsafe(self._pong)
            except RuntimeError:  # the loop closed: the client is going away
                self._stop.set()
            return 0.0
        blocked = now - sent
        if blocked > REPORT_AFTER and self._culprit is None:
            self._culprit = describe_task(asyncio.current_task(self.loop))
            logger.warning(
                "the event loop has made no progress for %.1f s, blocked by %s; other async "
                "handlers wait, and the lease is kept for up to %g s (Settings.max_blocked)",
                blocked,
                self._culprit,
                self.core.state.settings.max_blocked,
            )
        return blocked

    def _give_up(self, blocked: float) -> None:
        if not self._let_go:
            self._let_go = True
            logger.warning(
                "the event loop has been blocked for %.0f s, more than max_blocked (%g s), "
                "by %s: no longer renewing the lease, so peers fail this worker and run "
                "its tasks; it re-registers when its loop runs again",
                blocked,
                self.core.state.settings.max_blocked,
                self._culprit,
            )

    # -- on the loop -------------------------------------------------------------

    def _pong(self) -> None:
        self._last_ran = time.monotonic()  # before the ping is marked answered: read unlocked
        sent, self._ping_sent = self._ping_sent, None
        culprit, self._culprit = self._culprit, None
        self._let_go = False
        if culprit is not None and sent is not None:
            seconds = time.monotonic() - sent
            logger.warning("the event loop runs again after %.1f s blocked by %s", seconds, culprit)
            self.hooks.on_loop_blocked(seconds, culprit)


class AsyncLease:
    """An `AsyncWorqr`'s lease: the thread, on a sync client of its own
    (``redis``), and what it hands to the loop (``follow``, a task the client
    owns): recovering a lost lease and reconciling, run with ``drive``."""

    def __init__(
        self, core: Core, redis: Any, drive: Callable[[Plan[str]], Awaitable[str]]
    ) -> None:
        self.core = core
        self.redis = redis
        self._drive = drive
        self._pending: tuple[str, int] | None = None
        self._wanted = asyncio.Event()
        self._thread: LeaseThread | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        executor = SyncExecutor(self.redis, self.core.state.settings)
        self._thread = LeaseThread(self.core, executor, loop, self._followup, self.core.state.hooks)
        self._thread.start()

    def blocked(self, now: float) -> LoopWatch:
        """`LeaseThread.blocked`; nothing blocked before the thread started."""
        thread = self._thread
        return LoopWatch(0.0, "", None) if thread is None else thread.blocked(now)

    def _followup(self, worker: str, reply: int) -> None:
        """On the loop: a renewal left work for it."""
        self._pending = (worker, reply)
        self._wanted.set()

    async def follow(self) -> None:
        """Recover a lost lease and reconcile when the thread says so. A step
        that fails is asked for again by the thread's next renewal."""
        outage = OutageLog("lease", self.core.state.hooks)
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            pending, self._pending = self._pending, None
            if pending is None:
                continue
            try:
                await self._drive(self.core.liveness.after_renew(*pending))
                outage.ok()
            except Exception as error:
                outage.failed(error)

    def stop(self) -> None:
        if self._thread is not None:
            self._thread.stop()

    async def close(self) -> None:
        """Stop the thread, wait for it (a call in flight ends within the socket
        timeout) and close its connection: off the loop, since both may block."""
        self.stop()
        thread, self._thread = self._thread, None

        def close() -> None:
            if thread is not None:
                thread.join(timeout=5)
            self.redis.close()

        await asyncio.to_thread(close)
