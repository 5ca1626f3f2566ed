"""A worker module for the CLI's end-to-end tests (`worqr worker cli_worker_app:worker`).

Every handler reports what it does as ``"<event> <name> <pid>"`` entries on the
Redis list ``<record>:events`` ($CLI_TEST_RECORD), so a test can tell which
process started, finished or saw the cancellation of each task.

Each process also appends, once registered, the client settings it runs with as
JSON to ``<record>:settings``.

``crashing`` is a Worker whose every process dies (status 1) as it registers:
a crash loop at start.

Tasks of "jobs" are ``quick:<name>`` (finish at once) or ``hold:<name>`` (run
until the key ``<record>:release`` exists, or until cancelled). Tasks of the
persistent queue "sessions" run until cancelled.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import redis

import worqr

RECORD = os.environ.get("CLI_TEST_RECORD", "cli-test")

worker = worqr.Worker()
empty = worqr.Worker()  # no handlers: `worqr worker` refuses it
not_a_worker = 42
crashing = worqr.Worker()  # every process dies (status 1) as it registers: a crash loop

_client: redis.Redis | None = None


def make_worker() -> worqr.Worker:
    """MODULE:ATTR may name a function that returns the Worker."""
    return worker


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(worker.url or os.environ["WORQR_REDIS_URL"])
    return _client


def record(event: str, name: str) -> None:
    _redis().rpush(f"{RECORD}:events", f"{event} {name} {os.getpid()}")


def _registered(event: str, fields: dict[str, Any]) -> None:
    if event == "registered":
        client = worker.settings.client
        settings = {
            name: getattr(client, name)
            for name in ("ttl", "heartbeat", "poll_interval", "socket_timeout")
        }
        _redis().rpush(f"{RECORD}:settings", json.dumps({"pid": os.getpid(), **settings}))


worker.add_observer(_registered)


@crashing.handler("jobs")
def never(task: str) -> None:  # pragma: no cover - its process dies first
    raise AssertionError("a crashing worker ran a task")


crashing.add_observer(lambda event, fields: os._exit(1) if event == "registered" else None)


@worker.handler("jobs")
def job(task: str) -> None:
    kind, _, name = task.partition(":")
    record("started", name)
    if kind == "hold":
        cancelled = worqr.current_process().cancelled
        while not _redis().exists(f"{RECORD}:release"):
            if cancelled.wait(0.02):
                record("cancelled", name)
                return
    record("done", name)


@worker.handler("sessions", persistent=True)
async def session(task: str) -> None:
    record("started", task)
    try:
        await asyncio.Event().wait()  # never set: held until cancelled
    except asyncio.CancelledError:
        record("cancelled", task)
        raise
