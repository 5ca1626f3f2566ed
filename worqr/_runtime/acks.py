"""Finishes waiting to ride on their queue's next `complete` call.

A worker's handler that returns does not send its own finish: it leaves the
process here and wakes its queue's puller, whose next call finishes every
process waiting on that queue and takes new tasks in one script call. The
puller is woken at once, so a finish waits at most for the call in flight
(one round trip), never for a timer. Each waiter learns whether Redis accepted
its finish (False: fenced), or None when the puller gave the batch up
(shutdown): it then acknowledges on its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from .._process import Process

Ack = tuple[Process, "asyncio.Future[bool | None]"]


class AckBatcher:
    def __init__(self) -> None:
        self._pending: dict[str, list[Ack]] = {}

    def add(self, process: Process) -> asyncio.Future[bool | None]:
        future: asyncio.Future[bool | None] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(process.queue, []).append((process, future))
        return future

    def take(self, queue: str) -> list[Ack]:
        """Every finish waiting on ``queue``, oldest first, for one call."""
        return self._pending.pop(queue, None) or []

    def pending(self, queue: str) -> bool:
        return bool(self._pending.get(queue))

    def put_back(self, queue: str, acks: list[Ack]) -> None:
        """A call failed before finishing anything: they go out with the next one."""
        if acks:
            self._pending[queue] = acks + self._pending.get(queue, [])

    @staticmethod
    def resolve(acks: Sequence[Ack], accepted: Iterable[bool]) -> None:
        for (_, future), ok in zip(acks, accepted, strict=True):
            if not future.done():
                future.set_result(ok)

    @staticmethod
    def give_up(acks: Iterable[Ack]) -> None:
        """Their waiters acknowledge on their own (the result was not learnt)."""
        for _, future in acks:
            if not future.done():
                future.set_result(None)

    def give_up_queue(self, queue: str) -> None:
        self.give_up(self.take(queue))
