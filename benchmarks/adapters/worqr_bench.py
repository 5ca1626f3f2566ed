"""worqr: `Worqr.enqueue` / `enqueue_many`; workers are `worqr.Worker` with its
defaults (concurrency 8) and a sync handler, as the README shows; `worqr-async`
runs an async handler instead. ``--mode raw`` (or a worqr without the runtime)
runs a loop on the bare client: pub/sub wake-up, `dequeue_many`, `finish_process`.

`worqr-jobs` and `worqr-jobs-async`: the job layer on the same workloads:
`Worqr.submit` / `submit_many`, and a `@worker.job` handler (sync or async)
that returns None, so every job stores a result of type none and is retained
`JobSettings.result_ttl` (1 h) after it finished, as with the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

import worqr

from ..record import ahandle, handle
from .base import QUEUE, Adapter, SyncProducer, redis_url

RAW_BATCH = 10  # tasks a raw worker takes per dequeue (like a prefetch)


def runtime_available() -> bool:
    return hasattr(worqr, "Worker")


class WorqrProducer(SyncProducer):
    def __init__(self, url: str) -> None:
        self.client = worqr.Worqr(url)

    def enqueue_one(self, arg: str) -> None:
        self.client.enqueue(QUEUE, arg)

    def enqueue_bulk(self, args: Sequence[str]) -> None:
        self.client.enqueue_many(QUEUE, args)

    def close(self) -> None:
        self.client.close()


class WorqrJobsProducer(WorqrProducer):
    def enqueue_one(self, arg: str) -> None:
        self.client.submit(QUEUE, arg)

    def enqueue_bulk(self, args: Sequence[str]) -> None:
        self.client.submit_many(QUEUE, args)


class WorqrAdapter(Adapter):
    name = "worqr"
    distributions = ("worqr",)
    mode = "sync"
    bulk_api = "Worqr.enqueue_many (1,000 tasks per script call)"
    recovery_note = "peers fail a dead worker once its lease (ttl 3 s) expires"

    @property
    def model(self) -> str:  # type: ignore[override]
        if not runtime_available() or self.mode == "raw":
            return f"raw Worqr client loop (dequeue_many {RAW_BATCH}), 1 process per instance"
        kind = "async handler" if self.mode == "async" else "sync handler in its thread pool"
        return f"worqr.Worker (concurrency 8, {kind}), 1 process per instance"

    def producer(self, url: str) -> WorqrProducer:
        return WorqrProducer(url)

    def worker_command(self, url: str) -> list[str]:
        return self.module_command(__name__, "--mode", self.mode)


class WorqrAsyncAdapter(WorqrAdapter):
    name = "worqr-async"
    mode = "async"


class WorqrJobsAdapter(WorqrAdapter):
    name = "worqr-jobs"
    mode = "jobs"
    bulk_api = "Worqr.submit_many (500 jobs per script call, JobSettings.submit_chunk)"
    recovery_note = (
        "peers fail a dead worker once its lease (ttl 3 s) expires; its jobs go back to the front"
    )

    @property
    def model(self) -> str:  # type: ignore[override]
        kind = "async" if self.mode == "jobs-async" else "sync, in its thread pool"
        return (
            f"worqr.Worker (concurrency 8), @worker.job handler ({kind}) returning None "
            "(a result of type none stored, the job kept 1 h), 1 process per instance"
        )

    def producer(self, url: str) -> WorqrJobsProducer:
        return WorqrJobsProducer(url)


class WorqrJobsAsyncAdapter(WorqrJobsAdapter):
    name = "worqr-jobs-async"
    mode = "jobs-async"


class WorqrJobsTwoAdapter(WorqrJobsAdapter):
    """`worqr-jobs` at concurrency 2: what `worqr-isolated` is measured against."""

    name = "worqr-jobs-2"
    concurrency = 2

    @property
    def model(self) -> str:  # type: ignore[override]
        return (
            "worqr.Worker (concurrency 2), @worker.job handler (sync, in its thread pool) "
            "returning None, 1 process per instance"
        )

    def worker_command(self, url: str) -> list[str]:
        return self.module_command(
            __name__, "--mode", self.mode, "--concurrency", str(self.concurrency)
        )


class WorqrIsolatedAdapter(WorqrJobsTwoAdapter):
    """Isolated handlers: each instance a worker and its 2 handler children, as
    Celery's prefork pool at concurrency 2 is a main process and 2 children."""

    name = "worqr-isolated"
    mode = "jobs-isolated"

    @property
    def model(self) -> str:  # type: ignore[override]
        return (
            "worqr.Worker (concurrency 2), @worker.job(isolated=True) handler (in 2 child "
            "processes) returning None, 1 worker process per instance"
        )


def run_raw() -> None:
    """A worker on the bare client (the stand-in from before the runtime)."""
    client = worqr.Worqr(redis_url())
    stop = threading.Event()
    wake = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def on_event(event: str, message: Any) -> None:
        if event == "work":
            wake.set()

    client.start_worker()
    client.on(QUEUE, on_event)
    client.start_work(QUEUE)
    while not stop.is_set():
        wake.clear()  # before the dequeue: a wake-up that races it is kept
        processes = client.dequeue_many(QUEUE, RAW_BATCH)
        if not processes:
            wake.wait(1.0)
            continue
        for process in processes:
            hold = handle(process.task if isinstance(process.task, str) else "")
            if hold:
                time.sleep(hold)
            client.finish_process(process)
    client.close()


def _run_sync(payload: str) -> None:
    """The sync handler (of tasks or jobs): the workload's handler, then its hold."""
    hold = handle(payload)
    if hold:
        time.sleep(hold)


async def _run_async(payload: str) -> None:
    """The async handler (of tasks or jobs)."""
    hold = await ahandle(payload)
    if hold:
        await asyncio.sleep(hold)


def run_runtime(mode: str, concurrency: int | None) -> None:
    """A `worqr.Worker` with one handler: of jobs ("jobs", "jobs-async",
    "jobs-isolated") or of tasks ("sync", "async"); async when the mode says so,
    in child processes when it says isolated."""
    worker = worqr.Worker(redis_url(), concurrency=concurrency)
    if mode == "jobs-isolated":
        worker.job(QUEUE, isolated=True)(_run_sync)
    else:
        register = worker.job if mode.startswith("jobs") else worker.handler
        register(QUEUE)(_run_async if mode.endswith("async") else _run_sync)
    worker.run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--mode",
        choices=("sync", "async", "raw", "jobs", "jobs-async", "jobs-isolated"),
        default="sync",
    )
    parser.add_argument("--concurrency", type=int)
    args = parser.parse_args()
    if args.mode == "raw" or not runtime_available():
        run_raw()
    else:
        run_runtime(args.mode, args.concurrency)
