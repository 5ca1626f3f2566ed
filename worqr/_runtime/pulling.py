"""Taking work: one loop per queue that, when woken, fills the worker's free
slots with processes, carrying the finishes waiting on that queue in the same
script call."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .._clients.async_client import AsyncWorqr
from .._clients.outage import OutageLog
from .._errors import LeaseLostError
from .._hooks import Hooks
from .._process import Process
from .acks import Ack, Acknowledger, job_finishes
from .capacity import Capacity


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
        self._stopping = stopping
        # While self-fenced or refused as a former member: wait for a heartbeat.
        self._fence_wait = client.settings.heartbeat / 4

    async def pull(self, queue: str) -> None:
        """The loop of one queue, until the worker stops taking work."""
        wanted, batch = self.wanted[queue], self.acks.batch
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
                await self._fill(queue, outage)
        finally:
            batch.give_up_queue(queue)  # their handlers' tasks acknowledge alone

    async def _fill(self, queue: str, outage: OutageLog) -> None:
        """Take until the queue runs short or no slot is free; each take also
        finishes the processes waiting on this queue, in the same script call."""
        capacity, acks, client = self.capacity, self.acks, self.client
        while not self._stopping():
            if not client.lease_fresh():
                acks.flush(queue)  # finishes still go out: the work was ours
                await asyncio.sleep(self._fence_wait)  # self-fenced until a heartbeat lands
                continue
            asked = capacity.reserve(queue)
            if asked == 0:
                acks.flush(queue)  # no slot to fill: the finishes go alone
                return  # a process ending wakes this queue again
            carried = acks.batch.take(queue)
            try:
                processes, more = await self._take(queue, asked, carried)
            except asyncio.CancelledError:
                capacity.abandon(queue, asked)
                acks.batch.give_up(carried)
                raise
            except LeaseLostError:  # the heartbeat re-registers us; try again then
                self._wake(capacity.abandon(queue, asked))
                acks.send_alone(queue, carried)  # refused whole: resent alone
                await asyncio.sleep(self._fence_wait)
                continue
            except Exception as error:  # Redis away (or a bug): never give up the queue
                self._wake(capacity.abandon(queue, asked))
                acks.batch.put_back(queue, carried)
                log = acks.outage if carried else outage  # an ack that cannot land says so
                log.failed(error)
                await asyncio.sleep(log.backoff())
                continue
            outage.ok()
            if carried:
                acks.outage.ok()
            self._wake(capacity.settle(queue, asked, len(processes)))
            self.hooks.on_dequeue(queue, asked, len(processes))
            for process in processes:  # no await between settle and start: no over-commit
                self._start(process)
            if len(processes) < asked and not more and not acks.batch.pending(queue):
                return  # drained: the take put us in the idle set

    async def _take(self, queue: str, count: int, carried: list[Ack]) -> tuple[list[Process], bool]:
        """Finish ``carried`` and take up to ``count`` tasks or jobs in one call;
        also whether a job take stopped early with jobs maybe left."""
        client = self.client
        if queue in self.job_queues:
            accepted, jobs, more = await client._take_jobs(queue, job_finishes(carried), count)
            self.acks.batch.resolve(carried, accepted)
            return list(jobs), more
        if count and queue in self.persistent and queue not in self.configured:
            await client.configure_queue(queue, max_recoveries=-1)  # owner deaths never poison
            self.configured.add(queue)
        if not carried:
            return await client.dequeue_many(queue, count), False
        accepted, processes = await client.complete(queue, [a.process for a in carried], count)
        self.acks.batch.resolve(carried, accepted)
        return processes, False
