"""arq: `ArqRedis.enqueue_job`; workers are `arq WorkerSettings` (asyncio, up to
10 jobs at once, polling the queue every 0.5 s by default)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from ..record import ahandle
from .base import Adapter, AsyncProducer, redis_url

GATHER = 500  # concurrent enqueue calls in the bulk workload


async def task(ctx: dict[str, Any], arg: str) -> None:
    hold = await ahandle(arg)
    if hold:
        await asyncio.sleep(hold)


def _settings() -> Any:
    from arq.connections import RedisSettings

    return RedisSettings.from_dsn(redis_url())


class WorkerSettings:
    """What `arq benchmarks.adapters.arq_bench.WorkerSettings` runs (defaults otherwise)."""

    functions = (task,)
    redis_settings = _settings()


class ArqProducer(AsyncProducer):
    def __init__(self, url: str) -> None:
        super().__init__()
        from arq import create_pool
        from arq.connections import RedisSettings

        self.pool = self.run(create_pool(RedisSettings.from_dsn(url)))

    async def enqueue_one(self, arg: str) -> None:
        await self.pool.enqueue_job("task", arg)

    async def _bulk(self, args: Sequence[str]) -> None:
        for start in range(0, len(args), GATHER):
            chunk = args[start : start + GATHER]
            await asyncio.gather(*(self.pool.enqueue_job("task", arg) for arg in chunk))

    async def aclose(self) -> None:
        await self.pool.aclose()


class ArqAdapter(Adapter):
    name = "arq"
    distributions = ("arq",)
    model = "arq worker (asyncio, max_jobs 10, poll_delay 0.5 s), 1 process per instance"
    bulk_api = f"no batch API: asyncio.gather of enqueue_job, {GATHER} at a time"
    drain_share = 0.25  # reads 100 jobs per 0.5 s poll per worker by default
    recovery_note = "a job whose in-progress key outlives its worker reruns after job_timeout"

    def producer(self, url: str) -> ArqProducer:
        return ArqProducer(url)

    def worker_command(self, url: str) -> list[str]:
        return self.module_command("arq", f"{__name__}.WorkerSettings")
