"""What a worker's health probes answer: whether it makes progress (``/livez``)
and whether it is ready (``/readyz``), read from the parts of its run.

Every check reads what the run keeps anyway, from any thread, and never waits
on the event loop or on Redis, which may be what is stuck:

- the event loop: the lease thread's watch (`worqr._clients.lease`), which
  pings the loop every tick and knows what was running on it;
- the heartbeat: when the lease was last renewed (the core's
  ``last_heartbeat``), against the TTL;
- the pub/sub listener: its task still runs;
- the take loops: a take in flight for too long (`TakeLoop.oldest_take`) while
  the loop ran, or a puller task that ended while the worker was not stopping
  (a bug).

A check returns None when all is well, else one line that says what is wrong.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._clients.async_client import AsyncWorqr, ClientProgress
from .taking import TakeLoop

PULLER_PREFIX = "worqr-pull-"
"""Task names of the puller's take loops (`Worker._loops`), then the queue."""


@dataclass(eq=False)
class Watched:
    """The parts of one run of a worker that its checks read."""

    client: AsyncWorqr
    ttl: float
    take_loops: list[TakeLoop[Any]]
    started: threading.Event  # registered, joined and listening
    stopping: Callable[[], bool]
    pullers: list[asyncio.Task[None]] = field(default_factory=list)
    began: float = field(default_factory=time.monotonic)

    def live(self, livez_after: float) -> str | None:
        """None while the loop, the heartbeat, the listener and the take loops
        make progress; else what made none."""
        now = time.monotonic()
        progress = self.client.internals.progress(now)
        return (
            _loop(progress, livez_after)
            or self._heartbeat(progress, now)
            or self._listener(progress)
            or self._takes(livez_after, progress, now)
        )

    def ready(self) -> str | None:
        if self.stopping():
            return "shutting down"
        if not self.started.is_set():
            return "starting: not registered and listening yet"
        return None

    def _heartbeat(self, progress: ClientProgress, now: float) -> str | None:
        since = progress.since_heartbeat
        if since is None:  # not registered yet: counted from the run's start
            since = now - self.began
        if since <= self.ttl:
            return None
        return f"no heartbeat has landed for {since:.1f} s (ttl {self.ttl:g} s)"

    def _listener(self, progress: ClientProgress) -> str | None:
        if progress.listening or not self.started.is_set() or self.stopping():
            return None
        return "the pub/sub listener is not running"

    def _takes(self, livez_after: float, progress: ClientProgress, now: float) -> str | None:
        if self.stopping():
            return None  # the take loops are cancelled on the way out
        # A reply that came while the loop was blocked waits for the loop, not
        # for Redis: a take's wait counts only until the loop last ran (the
        # loop's own check names a block, once it passes livez_after).
        until = now if progress.loop_last_ran is None else min(now, progress.loop_last_ran)
        for task in self.pullers:
            if task.done():
                return f"{_take_loop(task)} ended: {_ending(task)}"
        for loop in self.take_loops:
            oldest = loop.oldest_take()
            if oldest is not None and until - oldest[1] > livez_after:
                queue, sent = oldest
                return f"a take from queue {queue!r} has waited {until - sent:.1f} s for Redis"
        return None


def _loop(progress: ClientProgress, livez_after: float) -> str | None:
    if progress.loop_blocked <= livez_after:
        return None
    return (
        f"the event loop has made no progress for {progress.loop_blocked:.1f} s "
        f"(blocked by {progress.culprit})"
    )


def _take_loop(task: asyncio.Task[None]) -> str:
    name = task.get_name()
    if name.startswith(PULLER_PREFIX):
        return f"the take loop of queue {name.removeprefix(PULLER_PREFIX)!r}"
    return f"the take loops ({name})"  # the lanes' task


def _ending(task: asyncio.Task[None]) -> str:
    if task.cancelled():
        return "cancelled"
    error = task.exception()
    return "returned" if error is None else f"{type(error).__name__}: {error}"


class WorkerChecks:
    """The checks of a worker, across its runs: ``watched()`` is the current
    run's parts (None outside a run). Before a run the worker is live (nothing
    is stuck) and not ready."""

    def __init__(self, watched: Callable[[], Watched | None], livez_after: float) -> None:
        self._watched = watched
        self.livez_after = livez_after

    def live(self) -> str | None:
        watched = self._watched()
        return None if watched is None else watched.live(self.livez_after)

    def ready(self) -> str | None:
        watched = self._watched()
        return "not running" if watched is None else watched.ready()
