"""How far lanes and the loop take ahead: while handlers are short, by how short.

Taking ahead hides the round trip to Redis behind the handlers that run, which
matters when a handler is about as quick as that round trip; and the more
processes one call brings, the less each costs. But a process taken ahead is
one a peer could have run: it waits for a handler slot. So the slots taken
ahead are ``concurrency`` times the whole number of mean handler times that fit
in `TAKE_AHEAD_BELOW` (at most `MOST_AHEAD`): a process waits in the line about
`TAKE_AHEAD_BELOW` at most, and handlers that take longer than that on average
get none. One slow handler cuts it at once; a run of quick ones raises it again.
"""

from __future__ import annotations

import threading

from .capacity import Capacity

TAKE_AHEAD_BELOW = 0.002  # seconds: the longest wait in the line, about ten round trips
MOST_AHEAD = 3  # times concurrency: what Celery holds by default (4 x, running ones included)
WEIGHT = 0.1  # of the newest handler time in the moving mean


def ahead_factor(mean: float) -> int:
    """How many times ``concurrency`` to take ahead for handlers of ``mean`` seconds."""
    if mean >= TAKE_AHEAD_BELOW:
        return 0
    if mean * MOST_AHEAD <= TAKE_AHEAD_BELOW:
        return MOST_AHEAD
    return int(TAKE_AHEAD_BELOW // mean)


class HandlerPace:
    """The moving mean of handler times, which sets ``capacity``'s slots taken
    ahead: ``concurrency`` times `ahead_factor` of the mean."""

    def __init__(self, capacity: Capacity, concurrency: int) -> None:
        self._capacity = capacity
        self._concurrency = concurrency
        self._mean = TAKE_AHEAD_BELOW  # no handler timed yet: not ahead
        self._factor = 0
        self._lock = threading.Lock()

    @property
    def mean(self) -> float:
        return self._mean

    def ended(self, seconds: float) -> None:
        """A handler ran ``seconds``."""
        with self._lock:
            self._mean += (seconds - self._mean) * WEIGHT
            factor = ahead_factor(self._mean)
            if factor != self._factor:
                self._factor = factor
                self._capacity.set_ahead(self._concurrency * factor)
