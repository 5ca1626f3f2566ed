"""Taking work: one loop per queue that, when woken, fills the worker's free
slots with processes, carrying the finishes waiting on that queue in the same
script call. The loop's decisions are `taking.TakeLoop`'s; this drives them
with ``await``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .._clients.async_client import AsyncWorqr
from .._clients.outage import OutageLog
from .._hooks import Hooks
from .._process import Process
from .acks import Ack, AckBatcher, Acknowledger, job_finishes
from .capacity import Capacity
from .taking import Pause, SendAlone, Take, TakeLoop, Taken, Took, Wake


class Puller:
    """The take loops of one worker run.

    ``wanted[queue]`` is set when the queue may have work for us (a wake-up, a
    freed slot); ``start`` launches a taken process; ``wake`` sets ``wanted`` of
    the queues `Capacity` says can use freed slots; ``stopping`` tells when to
    stop taking. Persistent queues are configured never to dead-letter before
    their first take.
    """

    def __init__(
        self,
        client: AsyncWorqr,
        *,
        capacity: Capacity,
        acks: Acknowledger,
        hooks: Hooks,
        wanted: dict[str, asyncio.Event],
        persistent: frozenset[str],
        job_queues: frozenset[str] = frozenset(),
        start: Callable[[Process], None],
        wake: Callable[[list[str]], None],
        stopping: Callable[[], bool],
    ) -> None:
        self.client = client
        self.capacity = capacity
        self.acks = acks
        self.hooks = hooks
        self.wanted = wanted
        self.persistent = persistent
        self.job_queues = job_queues
        self.configured: set[str] = set()  # persistent queues set never to dead-letter
        self._start = start
        self._wake = wake
        self.take_loop: TakeLoop[Ack] = TakeLoop(
            capacity,
            stopping=stopping,
            lease_fresh=lambda: client.lease_fresh(),
            # While self-fenced or refused as a former member: wait for a heartbeat.
            fence_wait=client.settings.heartbeat / 4,
            fills=True,
        )
        self._stopping = stopping

    async def pull(self, queue: str) -> None:
        """The loop of one queue, until the worker stops taking work."""
        wanted, batch = self.wanted[queue], self.acks.batch
        waiting = _Waiting(batch, queue)
        outage = OutageLog(f"dequeue from {queue!r}")
        try:
            while not self._stopping():
                await wanted.wait()
                if batch.pending(queue):
                    # One loop turn first: handlers that ended together then share
                    # this call instead of one each. A pub/sub wake-up of an idle
                    # worker has nothing to wait for: it dequeues at once.
                    await asyncio.sleep(0)
                wanted.clear()
                await self._fill(queue, waiting, outage)
        finally:
            batch.give_up_queue(queue)  # their handlers' tasks acknowledge alone

    async def _fill(self, queue: str, waiting: _Waiting, outage: OutageLog) -> None:
        """Take until the queue runs short or no slot is free; each take also
        finishes the processes waiting on this queue, in the same script call."""
        steps = self.take_loop.steps(queue, waiting, outage, self.acks.outage)
        try:
            for action in steps:
                if type(action) is Take:
                    try:
                        action.reply = await self._take(queue, action.count, action.finishes)
                    except Exception as error:  # the step decides what it means
                        action.error = error
                elif type(action) is Took:
                    self._took(queue, action)
                elif type(action) is Pause:
                    await asyncio.sleep(action.seconds)
                elif type(action) is SendAlone:
                    self.acks.send_alone(queue, action.finishes)
                elif type(action) is Wake:
                    self._wake(action.queues)
        except BaseException:  # cancelled: the take in flight gives its slots back
            steps.close()
            raise

    def _took(self, queue: str, took: Took[Ack]) -> None:
        self.acks.batch.resolve(took.finishes, took.accepted)
        self._wake(took.wake)
        self.hooks.on_dequeue(queue, took.asked, len(took.processes))
        for process in took.processes:  # no await between settle and start: no over-commit
            self._start(process)

    async def _take(self, queue: str, count: int, carried: list[Ack]) -> Taken:
        """Finish ``carried`` and take up to ``count`` tasks or jobs in one call:
        which finishes were accepted, the processes, and whether a job take
        stopped early with jobs maybe left."""
        client = self.client
        if queue in self.job_queues:
            accepted, jobs, more = await client.internals.take_jobs(
                queue,
                job_finishes(carried),
                count,
                full=count == 0,  # at its concurrency
            )
            return accepted, list(jobs), more
        if count and queue in self.persistent and queue not in self.configured:
            await client.configure_queue(queue, max_recoveries=-1)  # owner deaths never poison
            self.configured.add(queue)
        if not carried:
            return [], await client.dequeue_many(queue, count), False
        accepted, processes = await client.complete(queue, [a.process for a in carried], count)
        return accepted, processes, False


class _Waiting:
    """The finishes waiting on one queue, as the take loop carries them."""

    __slots__ = ("_batch", "_queue")

    def __init__(self, batch: AckBatcher, queue: str) -> None:
        self._batch = batch
        self._queue = queue

    def carry(self) -> list[Ack]:
        return self._batch.take(self._queue)

    def keep(self, finishes: list[Ack]) -> None:
        self._batch.put_back(self._queue, finishes)

    def again(self) -> bool:
        return self._batch.pending(self._queue)  # they ride on the next take
