"""How a worker acknowledges the end of its processes.

`AckBatcher`: finishes waiting to ride on their queue's next take (`complete`
for tasks, `job_take` for jobs, with each job's result).

A worker's handler that returns does not send its own finish: it leaves the
process here and wakes its queue's puller, whose next call finishes every
process waiting on that queue and takes new work in one script call. The
puller is woken at once, so a finish waits at most for the call in flight
(one round trip), never for a timer. Each waiter learns whether Redis accepted
its finish (False: fenced), or None when the puller gave the batch up
(shutdown): it then acknowledges on its own.

`Acknowledger`: everything else about acknowledgements, in one place: finishes
that go alone, stops, dead-letters and job failures, resends while Redis is
away, and what each result tells the hooks (accepted, or fenced).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from .._clients.async_client import AsyncWorqr
from .._clients.outage import OutageLog
from .._hooks import Hooks
from .._jobs import JobProcess
from .._process import Process

T = TypeVar("T")


@dataclass(slots=True)
class Ack:
    """One finish waiting for its queue's next call: a job's carries its result
    (``kind``: s, b or n)."""

    process: Process
    future: asyncio.Future[bool | None]
    kind: str = "n"
    result: bytes = b""


class AckBatcher:
    def __init__(self) -> None:
        self._pending: dict[str, list[Ack]] = {}

    def add(self, process: Process, kind: str = "n", result: bytes = b"") -> Ack:
        future: asyncio.Future[bool | None] = asyncio.get_running_loop().create_future()
        ack = Ack(process, future, kind, result)
        self._pending.setdefault(process.queue, []).append(ack)
        return ack

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
        for ack, ok in zip(acks, accepted, strict=True):
            if not ack.future.done():
                ack.future.set_result(ok)

    @staticmethod
    def give_up(acks: Iterable[Ack]) -> None:
        """Their waiters acknowledge on their own (the result was not learnt)."""
        for ack in acks:
            if not ack.future.done():
                ack.future.set_result(None)

    def give_up_queue(self, queue: str) -> None:
        self.give_up(self.take(queue))


def job_finishes(acks: Sequence[Ack]) -> list[tuple[JobProcess, str, bytes]]:
    """What `job_take` carries for ``acks`` (processes of a job queue)."""
    finishes = []
    for ack in acks:
        assert isinstance(ack.process, JobProcess)
        finishes.append((ack.process, ack.kind, ack.result))
    return finishes


Retrying = Callable[[Callable[[], Awaitable[Any]], OutageLog], Awaitable[Any]]
"""Runs a call until Redis answers it (`lifecycle.until_answered`)."""


class Acknowledger:
    """Sends one worker's acknowledgements and reports each result to ``hooks``.

    ``track`` registers a background task or future that a drain waits for;
    ``retrying`` resends a call while Redis is away (acknowledgements are safe
    to resend: a resent finish answers False, and changes nothing).
    ``job_queues``: the queues whose processes are jobs.
    """

    def __init__(
        self,
        client: AsyncWorqr,
        hooks: Hooks,
        track: Callable[[asyncio.Future[Any]], None],
        retrying: Retrying,
        job_queues: frozenset[str] = frozenset(),
    ) -> None:
        self.client = client
        self.hooks = hooks
        self.batch = AckBatcher()
        self.outage = OutageLog("acknowledge")
        self.job_queues = job_queues
        self._track = track
        self._retrying = retrying

    def finish_later(
        self, process: Process, seconds: float, kind: str = "n", result: bytes = b""
    ) -> None:
        """Finish with the queue's next call (the puller's next take, woken by the
        caller); the result reaches the hooks when that call returns."""
        ack = self.batch.add(process, kind, result)
        ack.future.add_done_callback(partial(self._batched, ack, seconds))
        self._track(ack.future)  # a drain waits for it (it ends when the puller stops)

    def _batched(self, ack: Ack, seconds: float, future: asyncio.Future[bool | None]) -> None:
        if future.cancelled():
            return  # cancelled by the last step of a shutdown, as its process task was
        ok = future.result()
        if ok is None:  # the puller stopped before learning the result: finish alone
            self._track(
                asyncio.create_task(self.finish(ack.process, seconds, ack.kind, ack.result))
            )
        else:
            self.report_finish(ack.process, seconds, ok)

    async def finish(
        self, process: Process, seconds: float, kind: str = "n", result: bytes = b""
    ) -> None:
        """Finish one process on its own call (when no take can carry it)."""
        if isinstance(process, JobProcess):
            job = process

            async def finish_job() -> bool:
                accepted, _, _ = await self.client.internals.take_jobs(
                    job.queue, [(job, kind, result)], 0
                )
                return accepted[0]

            self.report_finish(process, seconds, await self.run(finish_job, False))
        else:
            self.report_finish(
                process, seconds, await self.send(self.client.finish_process, process)
            )

    def report_finish(self, process: Process, seconds: float, ok: bool) -> None:
        hooks, queue = self.hooks, process.queue
        if ok:
            hooks.on_finished(queue, seconds)
        else:
            hooks.on_fenced(queue)
        if isinstance(process, JobProcess):
            hooks.on_job_run_ended(process, "finished" if ok else "fenced", seconds, None)

    def flush(self, queue: str) -> None:
        """Send the finishes waiting on ``queue`` now, without a take."""
        self.send_alone(queue, self.batch.take(queue))

    def send_alone(self, queue: str, acks: list[Ack]) -> None:
        """Finish ``acks`` without a take, in the background: the puller stays
        free to take a slot the moment one opens."""
        if acks:
            self._track(asyncio.create_task(self._finish_batch(queue, acks)))

    async def _finish_batch(self, queue: str, acks: list[Ack]) -> None:
        client = self.client
        try:
            if queue in self.job_queues:
                accepted, _, _ = await self._retrying(
                    lambda: client.internals.take_jobs(queue, job_finishes(acks), 0), self.outage
                )
            else:
                processes = [ack.process for ack in acks]
                accepted, _ = await self._retrying(
                    lambda: client.complete(queue, processes, 0), self.outage
                )
        except asyncio.CancelledError:
            self.batch.give_up(acks)  # their waiters acknowledge on their own
            raise
        except Exception:  # stopping now with Redis away: the waiters try once more
            self.batch.give_up(acks)
            return
        self.batch.resolve(acks, accepted)

    async def send(self, call: Callable[[Process], Awaitable[bool]], process: Process) -> bool:
        """Acknowledge with ``call`` (finish, stop or fail), retrying while Redis
        is away; False when refused (fenced) or when stopping with Redis away
        (peers then requeue the task)."""
        return bool(await self.run(lambda: call(process), False))

    async def run(self, call: Callable[[], Awaitable[T]], default: T) -> T:
        """``call()``, retried while Redis is away; ``default`` when stopping
        with Redis away."""
        try:
            result: T = await self._retrying(call, self.outage)
        except Exception:
            return default
        return result
