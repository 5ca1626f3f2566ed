"""A worker module whose async handler blocks its event loop (`worqr worker
blocked_app:worker`), for the blocked-loop tests.

Every event goes to the Redis list ``<record>:events`` ($BLOCKED_RECORD) as
``"<event> <name> <pid>"``: handler starts and ends, registrations, and
acknowledgements Redis refused (fenced).

Queue "blocking": ``<seconds>:<name>:<anything>`` calls ``time.sleep(seconds)``
on the loop (the classic mistake), only on the task's first run when the name
starts with ``once-``. Queue "holds": ``<name>`` awaits (without blocking) until
the key ``<record>:release`` exists.
"""

from __future__ import annotations

import asyncio
import os
import time

import redis
import redis.asyncio

import worqr

RECORD = os.environ.get("BLOCKED_RECORD", "blocked-test")

worker = worqr.Worker(concurrency=8)


def record(event: str, name: str) -> None:
    url = worker.url or os.environ["WORQR_REDIS_URL"]
    with redis.Redis.from_url(url) as client:
        client.rpush(f"{RECORD}:events", f"{event} {name} {os.getpid()}")


class Recorder(worqr.Hooks):
    def on_registered(self, worker_id: str) -> None:
        record("registered", worker_id)

    def on_fenced(self, queue: str) -> None:
        record("fenced", queue)

    def on_loop_blocked(self, seconds: float, culprit: str) -> None:
        record("loop_blocked", f"{seconds:.1f}")


worker.add_hooks(Recorder())


@worker.handler("blocking")
async def block(task: str) -> None:
    seconds, name, _ = task.split(":", 2)
    record("started", name)
    first = True
    if name.startswith("once-"):
        url = worker.url or os.environ["WORQR_REDIS_URL"]
        with redis.Redis.from_url(url) as client:
            first = bool(client.set(f"{RECORD}:ran:{name}", 1, nx=True))
    if first:
        time.sleep(float(seconds))  # noqa: ASYNC251 - blocks the whole event loop, on purpose
    record("returned", name)


@worker.handler("holds")
async def hold(task: str) -> None:
    record("started", task)
    client = redis.asyncio.Redis.from_url(worker.url or os.environ["WORQR_REDIS_URL"])
    try:
        while not await client.exists(f"{RECORD}:release"):  # noqa: ASYNC110 - polls Redis
            await asyncio.sleep(0.05)
    finally:
        await client.aclose()
    record("returned", task)
