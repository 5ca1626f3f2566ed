"""`drain(worker)`: run a worker's handlers in the test's process until its
queues have run dry, and report what happened.

The drain runs the real runtime: ``worker.run_async()`` on an event loop of
the calling thread (`drain_async`: on the test's own loop), against the
worker's configured Redis and prefix, with the real take, acknowledgement,
retry and timeout paths. It ends the way a burst does (`worqr._runtime.burst`):
once the drained queues have nothing queued, nothing active and nothing due;
then the worker stops gracefully (it can be drained again later).

``skip_delays=True`` makes delayed jobs and retry backoffs due at once: while
the drain runs, every few milliseconds, delayed jobs are promoted
(`promote_jobs`) and retrying ones made due now (`update_job(..., delay=None)`),
and the drain waits for every delayed and retrying job, however far away its
due time was. Attempts, retries and their errors are as they would be; only
the waiting is skipped (the worker still logs the backoff it chose). A flow's
jobs cannot be updated: a retrying flow job keeps its backoff.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections.abc import Iterable

from .._clients.async_client import AsyncWorqr
from .._runtime.burst import Burst
from .._runtime.worker import Worker
from .report import Collector, DrainReport

TICK = 0.01
"""Seconds between two looks at the queues (and promotions) while idle."""

_collectors: weakref.WeakKeyDictionary[Worker, Collector] = weakref.WeakKeyDictionary()


class DrainTimeoutError(AssertionError):
    """The queues did not run dry within the drain's timeout; the message says
    what was left, and ``report`` what happened until then."""

    def __init__(self, message: str, report: DrainReport) -> None:
        super().__init__(message)
        self.report = report


def drain(
    worker: Worker,
    *,
    queues: Iterable[str] | None = None,
    timeout: float = 10.0,
    skip_delays: bool = False,
) -> DrainReport:
    """Run ``worker``'s handlers here until ``queues`` (default: all it serves)
    have nothing queued, active or due; return what happened. Raises
    `DrainTimeoutError` after ``timeout`` seconds, naming what is left. Called
    from a coroutine: ``await drain_async(...)`` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("drain() was called inside a running event loop: await drain_async()")
    return asyncio.run(drain_async(worker, queues=queues, timeout=timeout, skip_delays=skip_delays))


async def drain_async(
    worker: Worker,
    *,
    queues: Iterable[str] | None = None,
    timeout: float = 10.0,
    skip_delays: bool = False,
) -> DrainReport:
    """`drain` on the running event loop."""
    served = _served(worker, queues)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    if not isinstance(skip_delays, bool):
        raise TypeError(f"skip_delays must be a bool, not {type(skip_delays).__name__}")
    collector = _collectors.get(worker)
    if collector is None:
        collector = _collectors[worker] = Collector()
        worker.add_hooks(collector)
    report = DrainReport()
    collector.report = report
    began = time.monotonic()
    run = asyncio.create_task(worker.run_async(), name="worqr-drain")
    try:
        report.left_for_later = await _until_dry(worker, run, served, timeout, skip_delays)
    except TimeoutError:
        left = await _describe(worker.client, served)
        worker.stop(now=True)
        raise DrainTimeoutError(
            f"drain timed out after {timeout:g} s; left: {left}", report
        ) from None
    finally:
        if not run.done():  # (a stop after the run would stop the next one at once)
            worker.stop()
        await asyncio.wait({run})
        collector.report = None
        report.seconds = time.monotonic() - began
    run.result()  # the run's own error, if it failed
    return report


def _served(worker: Worker, queues: Iterable[str] | None) -> list[str]:
    """The drained queues, checked."""
    if not isinstance(worker, Worker):
        raise TypeError(f"drain() takes a worqr.Worker, not {type(worker).__name__}")
    if isinstance(queues, str):
        raise TypeError("queues must be an iterable of queue names, not one str")
    names = list(worker.queues if queues is None else queues)
    unknown = sorted(set(names) - set(worker.queues))
    if unknown or not names:
        raise ValueError(f"queues must name queues the worker serves; not served: {unknown}")
    persistent = sorted(set(names) & set(worker.persistent_queues))
    if persistent:
        raise ValueError(f"persistent handlers never end, so a drain cannot: {persistent}")
    return names


async def _until_dry(
    worker: Worker,
    run: asyncio.Task[None],
    served: list[str],
    timeout: float,
    skip_delays: bool,
) -> int:
    """How many jobs are left for later once the queues have run dry."""
    deadline = time.monotonic() + timeout
    # The run sets its client and clears the last run's "started" in one step.
    while (client := worker.client) is None or not worker.wait_started(0):
        _check_running(run)
        await _tick(deadline)
    kinds = {queue: await client.internals.queue_kind(queue) == "jobs" for queue in served}
    wait = math.inf if skip_delays else 0.0
    # Only the counts say when: handlers of other queues may run on (persistent ones).
    burst = Burst(client, kinds, wait, idle=lambda: True, done=lambda: None)
    job_queues = [queue for queue, jobs in kinds.items() if jobs]
    while True:
        _check_running(run)
        if skip_delays:
            await _make_due(client, job_queues)
        left = await burst.left()
        if left is not None:
            return left
        await _tick(deadline)


async def _tick(deadline: float) -> None:
    if time.monotonic() >= deadline:
        raise TimeoutError
    await asyncio.sleep(TICK)


def _check_running(run: asyncio.Task[None]) -> None:
    if run.done():
        run.result()  # raises the run's error
        raise RuntimeError("the worker stopped during the drain (was stop() called?)")


async def _make_due(client: AsyncWorqr, queues: list[str]) -> None:
    for queue in queues:
        counts = await client.internals.job_counts(queue)
        if counts["delayed"]:
            await client.promote_jobs(queue)
        if counts["retrying"]:
            retrying, _ = await client.get_jobs(queue, "retrying", limit=100)
            for job in retrying:
                await client.update_job(queue, job.id, delay=None)


async def _describe(client: AsyncWorqr | None, served: list[str]) -> str:
    """The served queues' unfinished work, in words."""
    if client is None:
        return "unknown (the worker had not started: is its Redis reachable?)"
    said = []
    for queue in served:
        if await client.internals.queue_kind(queue) == "jobs":
            counts = await client.count_jobs(queue)
            states = ("queued", "active", "delayed", "retrying")
            parts = [f"{counts[state]} {state}" for state in states if counts[state]]
        else:
            parts = [f"{await client.count_tasks(queue)} queued"]
            parts.append(f"{await client.count_processes(queue)} running")
        said.append(f"{queue!r}: {', '.join(parts) or 'nothing'}")
    return "; ".join(said)
