"""How many processes a worker may still start, per queue. Pure bookkeeping.

A dequeue *reserves* its slots before it is sent and *settles* them when it
returns, so dequeues of several queues in flight at once never take more than
the free capacity between them. A queue is *starved* when it may have work this
worker has not taken: the last dequeue came back full, or a wake-up arrived with
no free slot. Such a worker is not in the queue's idle set, so nobody will wake
it: when a slot frees, the worker must pull from its starved queues itself. A
queue whose last dequeue came back short is back in the idle set and needs no
pull (that would be a wasted round trip per finished task).

Lanes may *take ahead* (`set_ahead`): hold more processes than they run, so a
lane that ends finds its next process waiting instead of a round trip. The
extra slots never apply to a queue with a cap of its own.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence


class Capacity:
    """Slots of one worker.

    Non-persistent processes share ``concurrency`` slots (and the slots taken
    ahead); persistent ones (which never end by themselves) have only their
    queue's cap, so they cannot starve the rest. Each queue is capped by
    ``limits`` (default ``concurrency``, and the slots taken ahead).
    Thread-safe: lanes (`lanes`) take and free slots from their own threads.
    """

    def __init__(
        self,
        queues: Sequence[str],
        *,
        concurrency: int,
        limits: Mapping[str, int],
        persistent: Iterable[str] = (),
        batch: int | None = None,
    ) -> None:
        self.concurrency = concurrency
        self._order = list(queues)  # fixed order: slots go round robin over it
        self._position = {queue: i for i, queue in enumerate(self._order)}
        self._limits = {queue: limits.get(queue, concurrency) for queue in self._order}
        self._persistent = frozenset(persistent)
        self._capped = frozenset(limits) | self._persistent  # never taken ahead
        self._ahead = 0
        self._batch = batch
        self._held: Counter[str] = Counter()  # running + reserved, per queue
        self._shared = 0  # running + reserved of non-persistent queues
        self._starved: set[str] = set()
        self._lock = threading.Lock()

    def free(self, queue: str) -> int:
        with self._lock:
            return self._free(queue)

    def set_ahead(self, extra: int) -> None:
        """Slots beyond ``concurrency`` that lanes may hold (0: none). Processes
        held beyond a lowered limit keep their slots until they end."""
        with self._lock:
            self._ahead = extra

    def _free(self, queue: str) -> int:
        ahead = 0 if queue in self._capped else self._ahead
        free = self._limits[queue] + ahead - self._held[queue]
        if queue not in self._persistent:
            free = min(free, self.concurrency + self._ahead - self._shared)
        return max(0, free)

    def held(self, queue: str) -> int:
        return self._held[queue]

    def starved(self, queue: str) -> bool:
        return queue in self._starved

    def wanted(self, queue: str) -> bool:
        """A wake-up for ``queue`` (for lanes): the queue is starved until a take
        comes back short, so the next slot that frees serves it, round robin.
        True when a slot is free to serve it now."""
        with self._lock:
            self._starved.add(queue)
            return self._free(queue) > 0

    def reserve(self, queue: str) -> int:
        """Slots to ask the next dequeue of ``queue`` for (0: none free)."""
        with self._lock:
            count = self._free(queue)
            if self._batch is not None:
                count = min(count, self._batch)
            if count <= 0:
                self._starved.add(queue)  # a wake-up we could not serve
                return 0
            self._starved.discard(queue)  # served: the take's answer says if it still is
            self._move(queue, count)
            return count

    def settle(self, queue: str, asked: int, got: int) -> list[str]:
        """A dequeue for ``asked`` returned ``got`` processes, which now hold their
        slots. Returns the other starved queues the unused slots can serve."""
        with self._lock:
            self._move(queue, got - asked)
            if got < asked:
                self._starved.discard(queue)  # drained: the dequeue put us in the idle set
            else:
                self._starved.add(queue)  # maybe more queued, and nobody will wake us for it
            return self._wakeable(queue, include_self=False) if got < asked else []

    def abandon(self, queue: str, asked: int) -> list[str]:
        """A dequeue failed: free its reservation; the queue may still hold work.
        Returns the other starved queues the freed slots can serve."""
        with self._lock:
            self._move(queue, -asked)
            self._starved.add(queue)
            return self._wakeable(queue, include_self=False)

    def release(self, queue: str) -> list[str]:
        """A process of ``queue`` ended. Returns the starved queues that can take
        work now, round robin: those after ``queue`` first, ``queue`` itself last,
        so one busy queue cannot keep the freed slots to itself."""
        with self._lock:
            self._move(queue, -1)
            return self._wakeable(queue, include_self=True)

    def pass_on(self, queue: str) -> tuple[str, int]:
        """A lane's process of ``queue`` ended, and the lane takes again at once:
        the queue it serves (the first starved one, round robin as `release`, else
        ``queue``) and the slots reserved for that take, the freed one included."""
        with self._lock:
            self._move(queue, -1)
            wakeable = self._wakeable(queue, include_self=True)
            target = wakeable[0] if wakeable else queue
            count = self._free(target)
            if self._batch is not None:
                count = min(count, self._batch)
            self._starved.discard(target)  # served, as by `reserve`
            self._move(target, count)
            return target, count

    def cap(self, queue: str, reserved: int) -> tuple[int, list[str]]:
        """Slots held for one take of ``queue`` (lanes combine several), cut to
        ``batch``; also the starved queues the slots given back can serve."""
        with self._lock:
            if self._batch is None or reserved <= self._batch:
                return reserved, []
            self._move(queue, self._batch - reserved)
            return self._batch, self._wakeable(queue, include_self=False)

    def _wakeable(self, queue: str, *, include_self: bool) -> list[str]:
        start = self._position[queue] + 1
        order = self._order[start:] + self._order[: start if include_self else start - 1]
        return [q for q in order if q in self._starved and self._free(q) > 0]

    def _move(self, queue: str, count: int) -> None:
        self._held[queue] += count
        if queue not in self._persistent:
            self._shared += count
        assert self._held[queue] >= 0 and self._shared >= 0, "slot accounting went negative"
