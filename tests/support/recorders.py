"""Recorders of what a client or a worker reports: listener events and hooks."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import worqr


class Events:
    """An ``on()`` callback that keeps every (event, message) with the time it
    arrived; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[tuple[float, str, Any]] = []

    def __call__(self, event: str, message: Any) -> None:
        with self._lock:
            self.events.append((time.monotonic(), event, message))

    def snapshot(self) -> list[tuple[str, Any]]:
        """Every (event, message) so far, in arrival order."""
        with self._lock:
            return [(e, m) for _, e, m in self.events]

    def seen(self, event: str, message: Any = None) -> list[Any]:
        """The messages of ``event`` (those equal to ``message``, if given)."""
        with self._lock:
            return [
                m for _, e, m in self.events if e == event and (message is None or m == message)
            ]

    def wakes(self) -> list[int]:
        """ "work" events that announced tasks (n > 0), not drain or poll hints."""
        return [n for n in self.seen("work") if n > 0]

    def hints(self) -> list[float]:
        """When each drain or poll hint ("work" with n = 0) arrived."""
        with self._lock:
            return [t for t, e, m in self.events if e == "work" and m == 0]


class OnLeaseLost(worqr.Hooks):
    """Hooks that call ``callback(old_worker_id)`` when the client loses its lease."""

    def __init__(self, callback: Callable[[str], object]) -> None:
        self.callback = callback

    def on_lease_lost(self, worker_id: str) -> None:
        self.callback(worker_id)


class HookCounter(worqr.Hooks):
    """Counts every worker hook call as (event, queue); thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[tuple[str, str]] = Counter()
        self.dequeues: list[tuple[str, int, int]] = []

    def _add(self, event: str, queue: str = "") -> None:
        with self.lock:
            self.counts[event, queue] += 1

    def total(self, event: str) -> int:
        with self.lock:
            return sum(n for (name, _), n in self.counts.items() if name == event)

    def ended(self) -> int:
        return sum(self.total(e) for e in ("finished", "failed", "retried", "cancelled", "fenced"))

    def on_started(self, queue: str) -> None:
        self._add("started", queue)

    def on_finished(self, queue: str, seconds: float) -> None:
        self._add("finished", queue)

    def on_failed(self, queue: str, seconds: float) -> None:
        self._add("failed", queue)

    def on_retried(self, queue: str) -> None:
        self._add("retried", queue)

    def on_cancelled(self, queue: str) -> None:
        self._add("cancelled", queue)

    def on_fenced(self, queue: str) -> None:
        self._add("fenced", queue)

    def on_lease_lost(self, worker_id: str) -> None:
        self._add("lease_lost")

    def on_dequeue(self, queue: str, asked: int, got: int) -> None:
        with self.lock:
            self.dequeues.append((queue, asked, got))

    def on_wakeup(self, queue: str) -> None:
        self._add("wakeup", queue)
