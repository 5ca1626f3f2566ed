"""RQ: `Queue.enqueue` / `Queue.enqueue_many`; workers are `rq worker` with the
forking `Worker` (a fork per job) or the `SimpleWorker` (jobs in-process)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..record import handle
from .base import QUEUE, Adapter, SyncProducer

BULK_CHUNK = 1000


def task(arg: str) -> None:
    hold = handle(arg)
    if hold:
        time.sleep(hold)


class RQProducer(SyncProducer):
    def __init__(self, url: str) -> None:
        import redis
        from rq import Queue

        self.connection = redis.Redis.from_url(url)
        self.queue = Queue(QUEUE, connection=self.connection)

    def enqueue_one(self, arg: str) -> None:
        self.queue.enqueue(task, arg)

    def enqueue_bulk(self, args: Sequence[str]) -> None:
        from rq import Queue

        for start in range(0, len(args), BULK_CHUNK):
            chunk = args[start : start + BULK_CHUNK]
            self.queue.enqueue_many([Queue.prepare_data(task, (arg,)) for arg in chunk])

    def close(self) -> None:
        self.connection.close()


class RQAdapter(Adapter):
    name = "rq"
    distributions = ("rq",)
    worker_class = "rq.worker.Worker"
    model = "rq worker (forking Worker: one fork per job), 1 process per instance"
    bulk_api = f"Queue.enqueue_many ({BULK_CHUNK} jobs per pipeline)"
    drain_share = 0.1
    recovery_note = "abandoned jobs go to the FailedJobRegistry after the job timeout (180 s)"

    def producer(self, url: str) -> RQProducer:
        return RQProducer(url)

    def worker_command(self, url: str) -> list[str]:
        return self.module_command("rq.cli", "worker", "-u", url, "-w", self.worker_class, QUEUE)


class RQSimpleAdapter(RQAdapter):
    name = "rq-simple"
    worker_class = "rq.worker.SimpleWorker"
    model = "rq worker -w SimpleWorker (jobs in the worker process), 1 process per instance"
    drain_share = 0.5
