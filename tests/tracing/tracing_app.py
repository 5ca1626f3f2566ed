"""Job handlers of the tracing tests (`worqr worker tests.tracing.tracing_app:worker`):
the OpenTelemetry SDK exports every span to files in $TRACE_DIR (tests/tracing/spans.py),
and the worker traces its runs with `worqr.tracing.TracingHooks`.

Each start is recorded as ``"started <job id> <pid> <attempt>"`` on the Redis list
``<record>:events`` ($JOB_RECORD), as tests/support/job_mesh.py reads it.

- "flaky": raises (quoting its payload) on its first attempt, returns after;
- "held": waits until the key ``<record>:release`` exists, then returns;
- "step": returns its payload with "+" appended (flows);
- "limited": raises `worqr.RateLimited` on its first start, returns after;
- "nested", "nested_sync": open a span of their own inside the run (it must nest
  under the run's), on the event loop and on a handler thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator

import redis.asyncio
from opentelemetry import trace

import worqr
from tests.tracing.spans import configure
from worqr.tracing import TracingHooks

RECORD = os.environ.get("JOB_RECORD", "tracing")
configure(os.environ["TRACE_DIR"])

worker = worqr.Worker(concurrency=4, hooks=[TracingHooks()])


@contextlib.asynccontextmanager
async def connected() -> AsyncIterator[redis.asyncio.Redis]:
    client = redis.asyncio.Redis.from_url(worker.url or os.environ["WORQR_REDIS_URL"])
    try:
        yield client
    finally:
        await client.aclose()


async def record(event: str) -> int:
    """Record ``event`` of the current job; returns how many starts it has had."""
    job = worqr.current_job()
    async with connected() as client:
        await client.rpush(f"{RECORD}:events", f"{event} {job.id} {os.getpid()} {job.attempt}")
        events = await client.lrange(f"{RECORD}:events", 0, -1)
    return sum(event.startswith(b"started " + job.id.encode() + b" ") for event in events)


@worker.job("flaky", backoff=0.05)
def flaky(payload: str) -> str:
    if worqr.current_job().attempt == 1:
        raise ValueError(f"not yet: {payload}")
    return "done"


@worker.job("held")
async def held(payload: str) -> str:
    await record("started")
    async with connected() as client:
        while not await client.exists(f"{RECORD}:release"):  # noqa: ASYNC110 - polls Redis
            await asyncio.sleep(0.02)
    return "released"


@worker.job("step")
def step(payload: str) -> str:
    return payload + "+"


@worker.job("nested")
async def nested(payload: str) -> str:
    with trace.get_tracer("tracing_app").start_as_current_span("inside"):
        return "nested"


@worker.job("nested_sync")
def nested_sync(payload: str) -> str:
    with trace.get_tracer("tracing_app").start_as_current_span("inside"):
        return "nested"


@worker.job("limited")
async def limited(payload: str) -> str:
    if await record("started") == 1:
        raise worqr.RateLimited(0.1)
    return "limited"
