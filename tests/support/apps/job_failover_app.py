"""Job handlers for the job failover tests (`worqr worker job_failover_app:worker`).

Each start is recorded as ``"started <job id> <pid> <attempt>"`` on the Redis list
``<record>:events`` ($JOB_RECORD); a handler that returns records ``"returned ..."``.

- "held": waits (without blocking the loop) until the key ``<record>:release``
  exists, then returns ``"by <pid>"`` (records ``"cancelled ..."`` if cancelled);
- "poison": kills its own worker process with SIGKILL, every time;
- "storm": payload ``"<n>:<millis>"``, sleeps that long and returns n squared.
"""

from __future__ import annotations

import asyncio
import os
import signal

import redis.asyncio

import worqr

RECORD = os.environ.get("JOB_RECORD", "job-failover")

worker = worqr.Worker(concurrency=4)


async def record(client: redis.asyncio.Redis, event: str) -> None:
    job = worqr.current_job()
    await client.rpush(f"{RECORD}:events", f"{event} {job.id} {os.getpid()} {job.attempt}")


def connect() -> redis.asyncio.Redis:
    return redis.asyncio.Redis.from_url(worker.url or os.environ["WORQR_REDIS_URL"])


@worker.job("held")
async def held(payload: str) -> str:
    client = connect()
    try:
        await record(client, "started")
        while not await client.exists(f"{RECORD}:release"):  # noqa: ASYNC110 - polls Redis
            await asyncio.sleep(0.02)
        await record(client, "returned")
    except asyncio.CancelledError:  # e.g. its worker found its lease lost
        await record(client, "cancelled")
        raise
    finally:
        await client.aclose()
    return f"by {os.getpid()}"


@worker.job("poison")
async def poison(payload: str) -> None:
    client = connect()
    try:
        await record(client, "started")
    finally:
        await client.aclose()
    os.kill(os.getpid(), signal.SIGKILL)


@worker.job("storm")
async def storm(payload: str) -> str:
    """Payload ``"<n>:<millis>"``: records the start, sleeps, returns ``n`` squared."""
    number, millis = (int(part) for part in payload.split(":"))
    client = connect()
    try:
        await record(client, "started")
    finally:
        await client.aclose()
    await asyncio.sleep(millis / 1000)
    return str(number * number)
