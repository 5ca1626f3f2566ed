"""The handlers `worqr demo` runs in its worker processes.

Jobs are short sync handlers (a few slow ones wait until they are cancelled,
some always fail); sessions are persistent async handlers, like one long-lived
connection each. Every handler records what it did under ``worqr-demo:<run>:*``
so the demo can account for each task. `examples/` shows the same patterns.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import zlib

import redis
import redis.asyncio as aioredis

from .._clients.connect import resolve_url
from .._runtime.context import current_process
from .._runtime.job_context import Fail, current_job
from .._runtime.settings import WorkerSettings
from .._runtime.worker import Worker

JOBS = "demo.jobs"
SESSIONS = "demo.sessions"
REPORTS = "demo.reports"  # a job queue, fed only by `worqr demo --keep`
RUN_ENV = "WORQR_DEMO_RUN"
SLOW_JOBS = 10
FAIL_EVERY = 97
SLOW_LIMIT = 120.0  # seconds a slow job waits for its cancellation

# The demo runs this many sessions per process, and a process takes no more, so
# they spread over the mesh (and the sessions of a killed process wait for its
# replacement or a free peer).
SESSIONS_PER_PROCESS = 2
worker = Worker(settings=WorkerSettings(queue_limits={SESSIONS: SESSIONS_PER_PROCESS}))

_local = threading.local()


def env_for(run_id: str) -> dict[str, str]:
    """Environment the demo gives its worker processes."""
    return {RUN_ENV: run_id}


def key(run_id: str, name: str) -> str:
    """The demo's own bookkeeping keys (not worqr's: the demo is a user of worqr)."""
    return f"worqr-demo:{run_id}:{name}"


def job_name(index: int, total: int) -> str:
    if index < min(SLOW_JOBS, total):
        return f"job-{index:05d}:slow"
    if index % FAIL_EVERY == FAIL_EVERY // 2:
        return f"job-{index:05d}:fail"
    return f"job-{index:05d}"


def is_slow(task: str) -> bool:
    return task.endswith(":slow")


def cleanup(client: redis.Redis, run_id: str) -> None:
    client.delete(*(key(run_id, name) for name in ("runs", "started", "done", "owner", "moved")))


def _run_id() -> str:
    return os.environ.get(RUN_ENV, "manual")


def _redis() -> redis.Redis:
    # One client per handler thread's process is enough (redis-py pools connections);
    # created lazily so importing this module connects to nothing.
    client: redis.Redis | None = getattr(_local, "client", None)
    if client is None:
        client = redis.Redis.from_url(resolve_url(None))
        _local.client = client
    return client


@worker.handler(JOBS)
def job(task: str) -> None:
    run = _run_id()
    client = _redis()
    client.hincrby(key(run, "runs"), task, 1)
    client.sadd(key(run, "started"), task)
    if is_slow(task):
        # Stands for long work that checks for cancellation as it goes.
        if current_process().cancelled.wait(SLOW_LIMIT):
            return
    else:
        time.sleep(0.005 + (zlib.crc32(task.encode()) % 25) / 1000)
    if task.endswith(":fail"):
        raise RuntimeError("this demo job always fails")
    client.sadd(key(run, "done"), task)


@worker.job(REPORTS, retries=1, backoff=2.0)
def report(payload: str) -> str:
    time.sleep(0.02 + (zlib.crc32(payload.encode()) % 80) / 1000)
    if payload.endswith(":flaky") and current_job().attempt == 1:
        raise RuntimeError("upstream timed out (retried)")
    if payload.endswith(":fail"):
        raise Fail("the report's source is gone")
    return f"{payload}: {zlib.crc32(payload.encode()) % 1000} rows"


@worker.handler(SESSIONS, persistent=True)
async def session(task: str) -> None:
    run = _run_id()
    client = aioredis.Redis.from_url(resolve_url(None))
    try:
        pid = str(os.getpid()).encode()
        previous = await client.hget(key(run, "owner"), task)
        if previous is not None and previous != pid:
            await client.sadd(key(run, "moved"), task)  # its owner died; a peer took over
        await client.hset(key(run, "owner"), task, pid)
        await client.hincrby(key(run, "runs"), task, 1)
        # Never set: held until cancelled (a long-lived connection would be served here).
        await asyncio.Event().wait()
    finally:
        await client.aclose()
