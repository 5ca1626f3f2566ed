"""Fixtures of the HTTP API tests: the app over a real `AsyncWorqr` of the
test's mesh, driven in-process with httpx (`api`), and a real worker in a
thread that runs the job handlers below (`job_worker`).

Jobs of "work" say what to do in their payload (as `support/apps/job_app.py`):
``text:<s>`` returns ``<s>``; ``bytes:<s>`` returns it as bytes; ``fail:<m>``
raises ``ValueError(<m>)``; ``hold`` reports progress "holding", then runs
until cancelled. "emails" returns ``sent to <payload>`` (the README's).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis

import worqr
from tests.support.timing import QUIET
from tests.support.workers import Runner, worker_settings
from worqr.http import create_app
from worqr.http.security import LOOPBACK_HOSTS

BASE = "http://127.0.0.1:8080"
TOKEN = "test-token-0123456789abcdef"


@dataclass
class Api:
    """One app under test: ``http`` talks to it, ``client`` is the library
    client it serves (the test may use it to arrange and to check)."""

    http: httpx.AsyncClient
    client: worqr.AsyncWorqr
    app: Any


Scenario = Callable[[Api], Awaitable[None]]
ApiRunner = Callable[..., None]


@pytest.fixture
def api(redis_url: str, prefix: str) -> ApiRunner:
    """``api(scenario, **create_app_options)``: run ``await scenario(Api)`` against
    a fresh app of the test's mesh (no token, payloads hidden, loopback Host
    names only, as `worqr http` serves by default, unless the options say
    otherwise); the client and connections are closed after."""

    def run(scenario: Scenario, **options: Any) -> None:
        async def main() -> None:
            settings = worqr.Settings(prefix=prefix, **QUIET)
            async with worqr.AsyncWorqr(redis_url, settings=settings) as client:
                values: dict[str, Any] = {
                    "token": None,
                    "show_payloads": False,
                    "trusted_hosts": LOOPBACK_HOSTS,
                    "events_interval": 0.05,
                    **options,
                }
                app = create_app(client, **values)
                transport = httpx.ASGITransport(app=app)
                async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
                    await scenario(Api(http, client, app))

        asyncio.run(main())

    return run


@pytest.fixture
def keys(redis_client: redis.Redis, prefix: str) -> Callable[[], list[bytes]]:
    """``keys()``: every key of the test's mesh (to prove nothing was written)."""
    return lambda: sorted(redis_client.scan_iter(match=f"*{prefix}*"))


def make_job_worker(redis_url: str, prefix: str) -> worqr.Worker:
    # No HTTP test fails a worker over: a lease of 5 s outlives a loaded machine's
    # stalls, which with FAST's 1 s made the worker fence itself and hand a held
    # job back to the queue mid-test.
    steady = {"ttl": 5.0, "heartbeat": 0.5}
    worker = worqr.Worker(redis_url, settings=worker_settings(prefix, steady, concurrency=8))

    @worker.job("work", retries=0, backoff=0.0)
    async def work(payload: str) -> str | bytes | None:
        kind, _, rest = payload.partition(":")
        if kind == "text":
            return rest
        if kind == "bytes":
            return rest.encode() + b"\xff"
        if kind == "fail":
            raise ValueError(rest)
        if kind == "hold":
            worqr.current_job().progress("holding")
            await asyncio.Event().wait()  # never set: held until cancelled
        return None

    worker.job("emails", retries=0)(send_email)
    return worker


def send_email(payload: str) -> str:
    """The README's handler of "emails"."""
    return f"sent to {payload}"


@pytest.fixture
def job_worker(redis_url: str, prefix: str) -> Iterator[worqr.Worker]:
    """A started `worqr.Worker` of the test's mesh on "work" and "emails"."""
    runner = Runner()
    worker = runner.start(make_job_worker(redis_url, prefix))
    try:
        yield worker
    finally:
        runner.stop_all()
