"""Job handlers for the traffic-control tests (`worqr worker limit_app:worker`).

- "rated": returns at once (the test reads start times from the job records);
- "capped": counts itself in ``<record>:running`` while it runs (20 ms), and
  pushes each count it saw on ``<record>:seen`` ($JOB_RECORD).
"""

from __future__ import annotations

import asyncio
import os

import redis.asyncio

import worqr

RECORD = os.environ.get("JOB_RECORD", "limits")

worker = worqr.Worker(concurrency=8)


@worker.job("rated")
async def rated(payload: str) -> None:
    return None


@worker.job("capped")
async def capped(payload: str) -> None:
    client = redis.asyncio.Redis.from_url(worker.url or os.environ["WORQR_REDIS_URL"])
    try:
        running = await client.incr(f"{RECORD}:running")
        await client.rpush(f"{RECORD}:seen", running)
        await asyncio.sleep(0.02)
        await client.decr(f"{RECORD}:running")
    finally:
        await client.aclose()
