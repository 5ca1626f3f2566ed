"""The mesh's recent recoveries, as this web view saw them.

worqr keeps no log of recoveries in Redis, only lifetime counters per queue
(``recovered``: tasks or jobs of dead workers returned to the front;
``dead_lettered`` / ``poisoned``: ones past ``max_recoveries``). So the view
remembers what changed between two reads of the overview: a counter that grew
is a recovery, a worker that left the registry is a departure (a failure by
its peers when its lease had expired). Kept in memory, bounded, and only while
someone has a page open: it is a window, not a history.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Literal

from ..http.replies import Reply, WorkerRow

MAX_EVENTS = 50

# Counters that mean "a dead worker's work moved": per queue kind.
RECOVERY_COUNTERS = ("recovered", "dead_lettered", "poisoned")


class QueueRecovery(Reply):
    """Counters of a queue that grew: only those that did are set."""

    at: float
    kind: Literal["queue"]
    queue: str
    recovered: int | None = None
    dead_lettered: int | None = None
    poisoned: int | None = None


class Departure(Reply):
    """A worker that left the registry: failed by its peers when its lease had
    expired, or deregistered (or died and was failed between two reads)."""

    at: float
    kind: Literal["worker"]
    worker: str
    host: str | None
    pid: int | None
    lease_expired: bool


Recovery = QueueRecovery | Departure


class RecoveryLog:
    """Compares each overview with the previous one and keeps what moved."""

    def __init__(self, limit: int = MAX_EVENTS) -> None:
        self._events: deque[Recovery] = deque(maxlen=limit)
        self._counters: dict[str, dict[str, int]] | None = None
        self._workers: dict[str, WorkerRow] = {}
        self._lock = threading.Lock()  # one log per app; requests may run on threads

    def observe(self, now: float, stats: dict[str, dict[str, int]], rows: list[WorkerRow]) -> None:
        """Record the recoveries and departures since the last overview: ``stats``
        are each queue's lifetime counters, ``rows`` the registered workers."""
        counters = {
            name: {c: int(values.get(c, 0)) for c in RECOVERY_COUNTERS}
            for name, values in stats.items()
        }
        workers = {row.id: row for row in rows}
        with self._lock:
            if self._counters is not None:  # the first overview is the baseline
                self._queue_events(now, counters)
                self._worker_events(now, workers)
            self._counters, self._workers = counters, workers

    def _queue_events(self, now: float, counters: dict[str, dict[str, int]]) -> None:
        assert self._counters is not None
        for name, values in counters.items():
            before = self._counters.get(name)
            if before is None:
                continue  # a new queue: its counters are its past, not news
            moved = {c: values[c] - before[c] for c in RECOVERY_COUNTERS if values[c] > before[c]}
            if moved:
                self._events.append(QueueRecovery(at=now, kind="queue", queue=name, **moved))

    def _worker_events(self, now: float, workers: dict[str, WorkerRow]) -> None:
        for worker, last in self._workers.items():
            if worker in workers:
                continue
            self._events.append(
                Departure(
                    at=now,
                    kind="worker",
                    worker=worker,
                    host=last.host,
                    pid=last.pid,
                    lease_expired=not last.alive,
                )
            )

    def recent(self) -> list[Recovery]:
        """The events seen, newest first."""
        with self._lock:
            return list(reversed(self._events))
