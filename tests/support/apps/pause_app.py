"""Job handlers for the pause tests (`worqr worker pause_app:worker`).

- "work": runs about 5 ms (the test reads start times from the job records);
- "ticks": the schedule "tick" (every 0.5 s, declared by every process at
  start), whose jobs return at once.
"""

from __future__ import annotations

import asyncio

import worqr

worker = worqr.Worker(concurrency=4)
worker.cron("ticks", "tick", every=0.5, payload="tick")


@worker.job("work")
async def work(payload: str) -> None:
    await asyncio.sleep(0.005)


@worker.job("ticks")
async def tick(payload: str) -> str:
    return payload
