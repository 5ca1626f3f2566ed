"""When lanes take ahead: while their handlers are short.

Taking ahead hides the round trip to Redis behind the handlers that run, which
matters when a handler is as quick as that round trip. It also holds processes
a peer could run: a process taken ahead waits for a lane about as long as a
handler runs. So lanes take ahead only while handlers end within
`TAKE_AHEAD_BELOW` seconds on average; one slow handler stops it at once, and a
run of quick ones starts it again.
"""

from __future__ import annotations

import threading

from .capacity import Capacity

TAKE_AHEAD_BELOW = 0.002  # seconds: a mean handler time about ten round trips long
WEIGHT = 0.1  # of the newest handler time in the moving mean


class HandlerPace:
    """The moving mean of handler times, which sets ``capacity``'s slots taken
    ahead: ``extra`` while the mean is below `TAKE_AHEAD_BELOW`, else none."""

    def __init__(self, capacity: Capacity, extra: int) -> None:
        self._capacity = capacity
        self._extra = extra
        self._mean = TAKE_AHEAD_BELOW  # no handler timed yet: not ahead
        self._ahead = False
        self._lock = threading.Lock()

    @property
    def mean(self) -> float:
        return self._mean

    def ended(self, seconds: float) -> None:
        """A handler ran ``seconds``."""
        with self._lock:
            self._mean += (seconds - self._mean) * WEIGHT
            ahead = self._mean < TAKE_AHEAD_BELOW
            if ahead != self._ahead:
                self._ahead = ahead
                self._capacity.set_ahead(self._extra if ahead else 0)
