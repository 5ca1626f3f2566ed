"""What idle lanes wait for (`lanes`): orders, and the line of taken processes.

An order is a queue to take from, `READY` (run what waits in the line) or
`STOP`. Processes a lane took beyond the one it runs join the line, and idle
lanes are called for them, no more than are idle; a lane empties the line
before it idles, so a process in the line never waits for a lane that idles.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from .._process import Process
from .line import Line

STOP = object()
READY = object()


class LaneOrders:
    def __init__(self) -> None:
        self._orders: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._line = Line()  # taken, waiting for a lane: oldest first, queues in turn
        self._idle = 0  # lanes waiting for an order
        self._called = 0  # READY orders not picked up yet

    def put(self, order: object) -> None:
        """A take order (a queue's name) or `STOP`."""
        self._orders.put(order)

    def wait(self) -> object:
        """An idle lane's next order (blocks while the line is empty)."""
        with self._lock:
            if self._line:  # lined up as this lane left it: no call was made for it
                return READY
            self._idle += 1
        order = self._orders.get()
        with self._lock:
            self._idle -= 1
            if order is READY:
                self._called -= 1
        return order

    def line_up(self, processes: list[Process], *, runs_one: bool) -> None:
        """Taken processes (their slots held) join the line; idle lanes are
        called for them, but for the one the calling lane runs next (``runs_one``)."""
        if not processes:
            return
        with self._lock:
            self._line.extend(processes)
            calls = min(len(processes) - runs_one, self._idle - self._called)
            self._called += max(0, calls)
        for _ in range(calls):
            self._orders.put(READY)

    def next(self) -> Process | None:
        """The line's next process (`Line.pop`), or None when it is empty."""
        with self._lock:
            return self._line.pop() if self._line else None
