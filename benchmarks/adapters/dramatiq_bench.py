"""Dramatiq with its Redis broker: `actor.send`; workers are `dramatiq MODULE
--processes 1 --threads 8` (the default thread count)."""

from __future__ import annotations

import time

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from ..record import handle
from .base import QUEUE, Adapter, SyncProducer, redis_url

THREADS = 8

broker = RedisBroker(url=redis_url())  # connects lazily
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name=QUEUE, max_retries=0)
def task(arg: str) -> None:
    hold = handle(arg)
    if hold:
        time.sleep(hold)


class DramatiqProducer(SyncProducer):
    def __init__(self, url: str) -> None:
        self.broker = RedisBroker(url=url)
        self.broker.declare_actor(task)

    def enqueue_one(self, arg: str) -> None:
        self.broker.enqueue(task.message(arg))

    def close(self) -> None:
        self.broker.close()


class DramatiqAdapter(Adapter):
    name = "dramatiq"
    distributions = ("dramatiq",)
    model = f"dramatiq --processes 1 --threads {THREADS}, 1 process per instance"
    recovery_note = "a dead worker's messages are requeued after heartbeat_timeout (60 s)"

    def producer(self, url: str) -> DramatiqProducer:
        return DramatiqProducer(url)

    def worker_command(self, url: str) -> list[str]:
        return self.module_command(
            "dramatiq", __name__, "--processes", "1", "--threads", str(THREADS)
        )
