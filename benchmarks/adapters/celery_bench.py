"""Celery with the Redis broker: `task.delay` / `group(...).apply_async()`;
workers are `celery worker` with the prefork pool (concurrency 1: a main
process and one child) or the threads pool (its default concurrency)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from celery import Celery, group

from ..record import handle
from .base import Adapter, SyncProducer, redis_url

BULK_CHUNK = 1000

app = Celery("bench", broker=redis_url())  # connects lazily


@app.task(name="bench.task")
def task(arg: str) -> None:
    hold = handle(arg)
    if hold:
        time.sleep(hold)


class CeleryProducer(SyncProducer):
    def __init__(self, url: str) -> None:
        self.app = Celery("bench-producer", broker=url, set_as_current=False)
        self.signature = self.app.signature("bench.task")

    def enqueue_one(self, arg: str) -> None:
        self.signature.apply_async((arg,))

    def enqueue_bulk(self, args: Sequence[str]) -> None:
        for start in range(0, len(args), BULK_CHUNK):
            chunk = args[start : start + BULK_CHUNK]
            group(self.signature.clone((arg,)) for arg in chunk).apply_async()

    def close(self) -> None:
        self.app.close()


class CeleryAdapter(Adapter):
    name = "celery"
    distributions = ("celery", "kombu")
    pool = "prefork"
    extra: tuple[str, ...] = ("--concurrency", "1")
    model = "celery worker --pool prefork --concurrency 1 (main + 1 child) per instance"
    bulk_api = f"group(...).apply_async(), {BULK_CHUNK} signatures at a time"
    recovery_note = "acks early by default: a task taken by a dead worker is lost"

    def producer(self, url: str) -> CeleryProducer:
        return CeleryProducer(url)

    def worker_command(self, url: str) -> list[str]:
        return self.module_command(
            "celery", "-A", __name__, "worker", "--pool", self.pool, *self.extra
        )


class CeleryPreforkTwoAdapter(CeleryAdapter):
    """The prefork pool at concurrency 2: `worqr-isolated`'s peer."""

    name = "celery-prefork-2"
    extra = ("--concurrency", "2")
    model = "celery worker --pool prefork --concurrency 2 (main + 2 children) per instance"


class CeleryThreadsAdapter(CeleryAdapter):
    name = "celery-threads"
    pool = "threads"
    extra = ()
    drain_share = 0.5
    model = "celery worker --pool threads (default concurrency), 1 process per instance"
