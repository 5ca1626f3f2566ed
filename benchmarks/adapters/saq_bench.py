"""saq: `Queue.enqueue`; workers are `saq ...settings` (asyncio, concurrency 10,
blocking dequeue)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..record import ahandle
from .base import QUEUE, Adapter, AsyncProducer, redis_url

GATHER = 500  # concurrent enqueue calls in the bulk workload


async def task(ctx: dict[str, Any], *, arg: str) -> None:
    hold = await ahandle(arg)
    if hold:
        await asyncio.sleep(hold)


def _settings() -> dict[str, Any]:
    from saq import Queue

    return {"queue": Queue.from_url(redis_url(), name=QUEUE), "functions": [task]}


settings = _settings()  # what `saq benchmarks.adapters.saq_bench.settings` runs


class SaqProducer(AsyncProducer):
    def __init__(self, url: str) -> None:
        super().__init__()
        from saq import Queue

        self.queue = Queue.from_url(url, name=QUEUE)
        self.run(self.queue.connect())

    async def enqueue_one(self, arg: str) -> None:
        await self.queue.enqueue("task", arg=arg)

    async def _bulk(self, args: Sequence[str]) -> None:
        for start in range(0, len(args), GATHER):
            chunk = args[start : start + GATHER]
            await asyncio.gather(*(self.queue.enqueue("task", arg=arg) for arg in chunk))

    async def aclose(self) -> None:
        await self.queue.disconnect()


class SaqAdapter(Adapter):
    name = "saq"
    distributions = ("saq",)
    model = "saq worker (asyncio, concurrency 10), 1 process per instance"
    bulk_api = f"no batch API: asyncio.gather of enqueue, {GATHER} at a time"
    recovery_note = "the sweeper (every 60 s) retries active jobs past their timeout"

    def producer(self, url: str) -> SaqProducer:
        return SaqProducer(url)

    def worker_command(self, url: str) -> list[str]:
        return self.module_command("saq", f"{__name__}.settings", "--quiet")
