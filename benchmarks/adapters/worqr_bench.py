"""worqr: `Worqr.enqueue` / `enqueue_many`; workers use `worqr.Worker` when the
runtime is installed, else a loop on the raw client (``BENCH_WORQR_MODE=raw``
forces it): pub/sub wake-up, `dequeue_many`, handler, `finish_process`."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

import worqr

from ..record import record
from .base import QUEUE, Adapter, SyncProducer, redis_url

RAW_BATCH = 10  # tasks a raw worker takes per dequeue (like a prefetch)


def runtime_available() -> bool:
    return hasattr(worqr, "Worker") and os.environ.get("BENCH_WORQR_MODE") != "raw"


class WorqrProducer(SyncProducer):
    def __init__(self, url: str) -> None:
        self.client = worqr.Worqr(url)

    def enqueue_one(self, arg: str) -> None:
        self.client.enqueue(QUEUE, arg)

    def enqueue_bulk(self, args: Sequence[str]) -> None:
        self.client.enqueue_many(QUEUE, args)

    def close(self) -> None:
        self.client.close()


class WorqrAdapter(Adapter):
    name = "worqr"
    distributions = ("worqr",)
    bulk_api = "Worqr.enqueue_many (1,000 tasks per script call)"
    recovery_note = "peers fail a dead worker once its lease (ttl 3 s) expires"

    @property
    def model(self) -> str:  # type: ignore[override]
        if runtime_available():
            return "worqr.Worker, 1 process per instance"
        return f"raw Worqr client loop (dequeue_many {RAW_BATCH}), 1 process per instance"

    def producer(self, url: str) -> WorqrProducer:
        return WorqrProducer(url)

    def worker_command(self, url: str) -> list[str]:
        return self.module_command(__name__)


def run_raw() -> None:
    """A worker on the bare client: the stand-in until the runtime exists."""
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
            hold = record(process.task if isinstance(process.task, str) else "")
            if hold:
                time.sleep(hold)
            client.finish_process(process)
    client.close()


def run_runtime() -> None:
    worker = worqr.Worker(redis_url())  # type: ignore[attr-defined]

    @worker.handler(QUEUE)  # type: ignore[misc]
    def task(process: Any) -> None:
        hold = record(process.task)
        if hold:
            time.sleep(hold)

    worker.run()


if __name__ == "__main__":
    if runtime_available():
        run_runtime()
    else:
        run_raw()
