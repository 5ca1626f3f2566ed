"""A worker for the schedule tests (`worqr worker schedule_app:worker`): it
declares the schedule "tick" of queue "ticks" (every second, registered by every
process at start) and records each job it runs as ``"<job id> <pid>"`` on the
Redis list ``<record>:ran`` ($SCHEDULE_RECORD)."""

from __future__ import annotations

import os

import redis.asyncio

import worqr

RECORD = os.environ.get("SCHEDULE_RECORD", "schedule")

worker = worqr.Worker(concurrency=2)
worker.cron("ticks", "tick", every=1, payload="tick")


@worker.job("ticks")
async def tick(payload: str) -> str:
    client = redis.asyncio.Redis.from_url(worker.url or os.environ["WORQR_REDIS_URL"])
    try:
        await client.rpush(f"{RECORD}:ran", f"{worqr.current_job().id} {os.getpid()}")
    finally:
        await client.aclose()
    return payload
