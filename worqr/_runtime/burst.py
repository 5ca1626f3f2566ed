"""Burst mode: a worker that stops by itself once its queues have run dry.

``Worker.run(burst=True, burst_wait=5.0)`` (``worqr worker --burst``) serves as
usual until every served queue has nothing queued, nothing active (on any
worker: bursting workers that share queues end together), and nothing delayed
or retrying that falls due within ``burst_wait`` seconds (Redis's clock); it
then stops gracefully (deregisters) and logs how many jobs were left for later.

The check reads the queue's counts (`job_counts`, or a task queue's length and
processes), and the soonest delayed and retrying job only when there are some.
It runs at most every `CHECK_INTERVAL` seconds and only while this worker has
no handler running (then the queue has active work anyway): never per job.

A paused queue's queued jobs cannot be taken: they count as left for later.
A schedule's next fire is no job yet: a burst does not wait for it.
Flow parents waiting for their children are not work of their own (their
children, when queued on a served queue, are).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Iterable

from .._clients.async_client import AsyncWorqr

logger = logging.getLogger("worqr.worker")

CHECK_INTERVAL = 0.1
"""Seconds between two looks at the counts while the worker is idle."""

DEFAULT_WAIT = 5.0


def burst_wait_of(burst: object, wait: object) -> float | None:
    """The checked wait of a burst run (None: not bursting); a ValueError or
    TypeError names a bad argument."""
    if not isinstance(burst, bool):
        raise TypeError(f"burst must be a bool, not {type(burst).__name__}")
    if isinstance(wait, bool) or not isinstance(wait, (int, float)):
        raise TypeError(f"burst_wait must be a number of seconds, not {type(wait).__name__}")
    if not math.isfinite(wait) or wait < 0:
        raise ValueError(f"burst_wait must be a finite number of seconds >= 0, got {wait!r}")
    return float(wait) if burst else None


def refuse_persistent(persistent: Iterable[str]) -> None:
    """Persistent handlers never end, so a burst could never see its queues dry."""
    queues = sorted(persistent)
    if queues:
        raise ValueError(
            f"burst mode cannot serve persistent handlers (queues {queues}): "
            "they never end, so the queues never run dry"
        )


class Burst:
    """Watches the served queues and calls ``done`` once they have run dry."""

    def __init__(
        self,
        client: AsyncWorqr,
        queues: dict[str, bool],
        wait: float,
        *,
        idle: Callable[[], bool],
        done: Callable[[], None],
    ) -> None:
        self._client = client
        self._queues = queues  # name -> holds jobs
        self._wait = wait
        self._idle = idle
        self._done = done
        self.left_for_later: int | None = None  # set when the queues ran dry

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(CHECK_INTERVAL)
            if not self._idle():
                continue
            try:
                left = await self.left()
            except Exception as error:  # Redis away: look again on the next turn
                logger.debug("burst: reading the queues' counts failed: %s", error)
                continue
            if left is not None:
                break
        self.left_for_later = left
        logger.info(
            "burst: the queues ran dry; stopping (%d job%s left for later, due after %g s)",
            left,
            "" if left == 1 else "s",
            self._wait,
        )
        self._done()

    async def left(self) -> int | None:
        """None while some queue has work now or due within the wait; else how
        many jobs are left for later."""
        later = 0
        for queue, jobs in self._queues.items():
            counted = await (self._jobs_left(queue) if jobs else self._tasks_left(queue))
            if counted is None:
                return None
            later += counted
        return later

    async def _tasks_left(self, queue: str) -> int | None:
        client = self._client
        if await client.count_processes(queue) or await client.count_tasks(queue):
            return None
        return 0

    async def _jobs_left(self, queue: str) -> int | None:
        client = self._client
        counts = await client.internals.job_counts(queue)
        if counts["active"]:
            return None
        queued = counts["queued"]
        if queued and not await client.is_paused(queue):
            return None
        pending = [state for state in ("delayed", "retrying") if counts[state]]
        if pending:
            due_by = await client.server_time() + self._wait
            for state in pending:
                soonest, _ = await client.get_jobs(queue, state, limit=1)
                # None left in that state since the counts were read: it moved on
                # (promoted, maybe taken already), so look again next turn.
                if not soonest or (soonest[0].due or 0.0) <= due_by:
                    return None
        return queued + counts["delayed"] + counts["retrying"]
