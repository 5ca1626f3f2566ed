"""The ceiling: a minimal hand-written list queue with no guarantees at all.

Producer: ``LPUSH`` (bulk: one ``LPUSH`` with 1,000 values per call). Worker:
``RPOP key 100`` while there is work, ``BRPOP`` to wait for more. A task popped
by a worker that dies is lost; nothing is acknowledged.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence

import redis

from ..record import handle
from .base import QUEUE, Adapter, SyncProducer, redis_url

KEY = f"raw:{QUEUE}"
POP_BATCH = 100
PUSH_BATCH = 1000


class RawProducer(SyncProducer):
    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)

    def enqueue_one(self, arg: str) -> None:
        self.client.lpush(KEY, arg)

    def enqueue_bulk(self, args: Sequence[str]) -> None:
        for start in range(0, len(args), PUSH_BATCH):
            self.client.lpush(KEY, *args[start : start + PUSH_BATCH])

    def close(self) -> None:
        self.client.close()


class RawListAdapter(Adapter):
    name = "raw-list"
    distributions = ("redis",)
    model = f"LPUSH / RPOP {POP_BATCH} + BRPOP, no acknowledgement, 1 process per instance"
    bulk_api = f"LPUSH with {PUSH_BATCH} values per call"
    recovery_note = "no recovery: a popped task is gone"

    def producer(self, url: str) -> RawProducer:
        return RawProducer(url)

    def worker_command(self, url: str) -> list[str]:
        return self.module_command(__name__)


def main() -> None:
    client = redis.Redis.from_url(redis_url(), decode_responses=True)
    running = True

    def stop(*_: object) -> None:
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    while running:
        batch = client.rpop(KEY, POP_BATCH)
        if not batch:
            popped = client.brpop([KEY], timeout=1)
            batch = [popped[1]] if popped else []
        for arg in batch:
            hold = handle(arg)
            if hold:
                time.sleep(hold)


if __name__ == "__main__":
    main()
