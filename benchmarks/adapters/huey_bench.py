"""huey with Redis storage: calling the task enqueues it; workers are
`huey_consumer MODULE.huey` (one worker thread, blocking dequeue)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from huey import RedisHuey

from ..record import handle
from .base import QUEUE, Adapter, SyncProducer, redis_url

TASK = "bench.task"


def run_task(arg: str) -> None:
    hold = handle(arg)
    if hold:
        time.sleep(hold)


huey = RedisHuey(QUEUE, url=redis_url())  # what the consumer runs; connects lazily
task = huey.task(name=TASK)(run_task)


class HueyProducer(SyncProducer):
    def __init__(self, url: str) -> None:
        self.huey = RedisHuey(QUEUE, url=url)
        self.task = self.huey.task(name=TASK)(run_task)

    def enqueue_one(self, arg: str) -> None:
        self.task(arg)

    def enqueue_bulk(self, args: Sequence[str]) -> None:
        self.task.map([(arg,) for arg in args])

    def close(self) -> None:
        self.huey.storage.conn.close()


class HueyAdapter(Adapter):
    name = "huey"
    distributions = ("huey",)
    model = "huey_consumer -w 1 (worker thread, blocking dequeue), 1 process per instance"
    bulk_api = "no batch API (task.map loops over enqueue)"
    recovery_note = "no recovery: a dequeued task lives only in its consumer's memory"

    def producer(self, url: str) -> HueyProducer:
        return HueyProducer(url)

    def worker_command(self, url: str) -> list[str]:
        return self.module_command("huey.bin.huey_consumer", f"{__name__}.huey", "-w", "1")
