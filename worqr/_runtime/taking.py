"""The take loop's decisions, written once, without I/O.

A worker takes work on two paths: the loop's puller (`pulling`, async) and the
lanes (`lanes`, threads). Both run the same loop: take as many processes as
the queue has free slots, carrying the finishes waiting on it, until Redis
answers; while the lease is not fresh, finishes still go out and the loop
waits for a heartbeat; with no slot free, the finishes go alone; a refused
lease gives the reservation back and resends the finishes alone; any other
error gives it back, keeps the finishes and the queue, logs the outage and
backs off.

`TakeLoop.steps` is that loop as a generator of *actions*, like the core's
plans (`worqr._core.calls`): it yields what to do, and the shell that drives
it (``for action in steps``) does it with its own I/O, ``await`` or a blocking
call, and leaves a take's reply or error on the `Take` itself. A shell that
stops driving (a cancel) closes the generator, which gives back the slots of
the take in flight. The step keeps the slot accounting (`Capacity`) and the
outage logs itself; the finishes stay with the shell (`Finishes`), so
whatever a loop that ends did not send is still there.

A drain's steady state costs one generator, one `Take` and one `Took` per
take, and no exception: a generator driven by ``for`` ends without one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from .._clients.outage import OutageLog
from .._errors import LeaseLostError
from .._process import Process
from .capacity import Capacity

F = TypeVar("F")

Taken = tuple[list[bool], list[Process], bool]
"""A take's reply: which carried finishes Redis accepted, the processes taken,
and whether a job take stopped early with jobs maybe left."""


@dataclass(slots=True)
class Take(Generic[F]):
    """Finish ``finishes`` and take up to ``count`` processes in one call; the
    shell sets ``reply``, or ``error`` when the call raised an `Exception`."""

    count: int
    finishes: list[F]
    reply: Taken | None = None
    error: Exception | None = None


@dataclass(slots=True)
class Took(Generic[F]):
    """The take landed and its slots are settled: report each finish's result
    (``accepted``) and the dequeue (``asked``, ``len(processes)``), wake
    ``wake``, and start ``processes``, with no wait before they start."""

    asked: int
    processes: list[Process]
    finishes: list[F]
    accepted: list[bool]
    wake: list[str]


@dataclass(slots=True)
class SendAlone(Generic[F]):
    """Finish ``finishes`` without a take. ``refused``: a take carrying them was
    refused whole (the lease was lost), so they are resent."""

    finishes: list[F]
    refused: bool = False


@dataclass(slots=True)
class Pause:
    """Wait ``seconds`` before the next try."""

    seconds: float


@dataclass(slots=True)
class Wake:
    """``queues`` may be served by slots just freed (or may have work left)."""

    queues: list[str]


Action = Take[F] | Took[F] | SendAlone[F] | Pause | Wake
Steps = Generator[Action[F], None, None]
Turn = Generator[Action[F], None, bool]  # returns whether the loop goes on


class Finishes(Protocol[F]):
    """The shell's finishes waiting on one queue, and whether to look again."""

    def carry(self) -> list[F]:
        """Every finish waiting, for one call: the shell no longer holds them."""
        ...

    def keep(self, finishes: list[F]) -> None:
        """A call carrying ``finishes`` failed before finishing any: the next
        one carries them, before any that came meanwhile."""
        ...

    def again(self) -> bool:
        """After a take came back short (read after its slots are settled): a
        reason to look at the queue again (finishes wait; a wake-up came)."""
        ...


class TakeLoop(Generic[F]):
    """The decisions of one worker's take loops.

    ``stopping`` tells when to stop taking; while ``lease_fresh`` is False (or
    the lease is refused) the loop waits ``fence_wait`` seconds between tries.
    ``fills``: after a take that came back full or with work left, take again
    (the puller, which starts what it takes); else end there (a lane, which
    runs what it took: a full take leaves the queue starved, and the next slot
    that frees serves it).
    """

    def __init__(
        self,
        capacity: Capacity,
        *,
        stopping: Callable[[], bool],
        lease_fresh: Callable[[], bool],
        fence_wait: float,
        fills: bool,
    ) -> None:
        self.capacity = capacity
        self.fence_wait = fence_wait
        self.fills = fills
        self._stopping = stopping
        self._lease_fresh = lease_fresh
        # Takes in flight (id of the Take -> queue, when yielded): the health probes' read.
        self.in_flight: dict[int, tuple[str, float]] = {}

    def oldest_take(self) -> tuple[str, float] | None:
        """The queue and start (monotonic) of the take in flight longest, if any."""
        taking = list(self.in_flight.values())  # one C call: safe beside lane threads
        return min(taking, key=lambda each: each[1]) if taking else None

    def steps(
        self,
        queue: str,
        finishes: Finishes[F],
        outage: OutageLog,
        ack_outage: OutageLog,
        reserved: int = 0,
    ) -> Steps[F]:
        """Take from ``queue`` until it runs short, no slot is free (or, for a
        lane, once), or the worker stops. ``reserved``: slots held for the first
        take already (a lane's). ``outage`` logs failed takes, ``ack_outage``
        failed takes that carried finishes (an ack that cannot land says so)."""
        capacity = self.capacity
        while True:
            if self._stopping() or not self._lease_fresh():
                if not (yield from self._fenced(queue, finishes, reserved)):
                    return
                reserved = 0
                continue
            asked, wakeable = self._reserve(queue, reserved)
            reserved = 0
            if wakeable:
                yield Wake(wakeable)
            if asked == 0:
                yield from self._alone(finishes)  # no slot to fill: the finishes go alone
                return  # a process ending wakes this queue again
            carried = finishes.carry()
            take = Take(asked, carried)
            self.in_flight[id(take)] = (queue, time.monotonic())
            try:
                yield take
            except GeneratorExit:  # the shell stopped (a cancel) and holds what it did
                capacity.abandon(queue, asked)
                finishes.keep(carried)
                raise
            finally:
                del self.in_flight[id(take)]
            if take.reply is None:
                assert take.error is not None
                yield from self._failed(queue, take, finishes, outage, ack_outage)
                continue
            accepted, processes, more = take.reply
            outage.ok()
            if carried:
                ack_outage.ok()
            got = len(processes)
            wake = capacity.settle(queue, asked, got)
            # Full: maybe more queued (the queue stays starved; a lane's next freed slot serves it).
            again = self.fills if got == asked else self._again(queue, more, finishes, wake)
            # The shell starts them with no wait after the settle: no over-commit.
            yield Took(asked, processes, carried, accepted, wake)
            if not again:
                return

    def _reserve(self, queue: str, reserved: int) -> tuple[int, list[str]]:
        """Slots to ask the next take for (0: none free): ``reserved`` (held
        already, a lane's) cut to ``batch``, with the queues the rest can
        serve; else reserved now."""
        if reserved:
            return self.capacity.cap(queue, reserved)
        return self.capacity.reserve(queue), []

    def _again(self, queue: str, more: bool, finishes: Finishes[F], wake: list[str]) -> bool:
        """After a take came back short, its slots settled: whether to take
        again. The queue may hold more when jobs may be left, finishes wait, or
        a wake-up came meanwhile (read after the settle: a wake-up during the
        take must not die with the starved mark the settle cleared). A lane
        runs what it took instead, and adds the queue to ``wake``."""
        if not more and not finishes.again():
            return False  # drained: the take put us in the idle set
        if not self.fills:
            wake.append(queue)  # jobs may be left, or a wake-up came meanwhile
        return self.fills

    def _fenced(self, queue: str, finishes: Finishes[F], reserved: int) -> Turn[F]:
        """Stopping, or self-fenced until a heartbeat lands. Returns whether to
        go on (what the shell holds stays there when the loop stops)."""
        if reserved and (wakeable := self.capacity.abandon(queue, reserved)):
            yield Wake(wakeable)
        if self._stopping():
            return False
        yield from self._alone(finishes)  # the work was ours: its finish goes out
        yield Pause(self.fence_wait)
        return True

    def _alone(self, finishes: Finishes[F]) -> Steps[F]:
        if carried := finishes.carry():
            yield SendAlone(carried)

    def _failed(
        self,
        queue: str,
        take: Take[F],
        finishes: Finishes[F],
        outage: OutageLog,
        ack_outage: OutageLog,
    ) -> Turn[F]:
        """A take failed: its slots are given back; then, when the lease was
        refused (the heartbeat re-registers us), its finishes are resent alone
        and the loop waits a heartbeat; when Redis is away (or on a bug), they
        wait for the next take, the outage is logged once, and the loop backs
        off: it never gives up the queue."""
        error, carried = take.error, take.finishes
        assert error is not None
        if wakeable := self.capacity.abandon(queue, take.count):
            yield Wake(wakeable)
        if isinstance(error, LeaseLostError):
            if carried:
                yield SendAlone(carried, refused=True)  # refused whole: resent alone
            yield Pause(self.fence_wait)
            return True
        finishes.keep(carried)
        log = ack_outage if carried else outage  # an ack that cannot land says so
        log.failed(error)
        yield Pause(log.backoff())
        return True
