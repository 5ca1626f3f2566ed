"""`AsyncWorqr` bounds each command of the client it builds to
``socket_timeout`` itself (one timer per command, not redis-py's two): a
reply that does not come in time is an ambiguous failure, and the connection
it was read from is never reused with the late reply in it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest
import redis

import worqr
from tests.support.waiting import wait_until
from worqr.embedded import EmbeddedRedis

SOCKET_TIMEOUT = 0.25
FREEZE = 1.0  # seconds of DEBUG SLEEP: past the socket timeout


def frozen(url: str) -> bool:
    """Whether the server is asleep: a PING gets no answer in 50 ms."""
    with redis.Redis.from_url(url, socket_timeout=0.05) as probe:
        try:
            probe.ping()
        except redis.TimeoutError:
            return True
    return False


def freeze(url: str) -> threading.Thread:
    """Freeze the server for FREEZE seconds from a thread; return once it sleeps."""

    def sleep() -> None:
        with redis.Redis.from_url(url, socket_timeout=10) as admin:
            admin.execute_command("DEBUG", "SLEEP", FREEZE)

    thread = threading.Thread(target=sleep)
    thread.start()
    wait_until(lambda: frozen(url), timeout=FREEZE / 2, message="the server to freeze")
    return thread


def test_a_late_reply_is_ambiguous_and_never_read_by_the_next_command(
    make_redis: Callable[..., EmbeddedRedis],
) -> None:
    server = make_redis()
    settings = worqr.Settings(socket_timeout=SOCKET_TIMEOUT, retry_deadline=0.1)

    async def main() -> None:
        async with worqr.AsyncWorqr(server.url, settings=settings) as client:
            assert client._command_timeout == SOCKET_TIMEOUT
            await client.enqueue_many("q", ["before"])
            sleeper = await asyncio.to_thread(freeze, server.url)
            started = time.monotonic()
            with pytest.raises(worqr.AmbiguousResultError):
                await client.enqueue_many("q", ["during"])  # not resent: it may have run
            waited = time.monotonic() - started
            assert SOCKET_TIMEOUT * 0.8 <= waited < FREEZE - 0.2, waited
            await asyncio.to_thread(sleeper.join)
            # The enqueue ran once the server woke; its late reply died with its
            # connection, so each command now reads its own reply.
            assert await client.count_tasks("q") == 2
            assert await client.enqueue_many("q", ["after"]) == 1
            assert await client.count_tasks("q") == 3

    asyncio.run(main())


def test_an_idempotent_read_is_resent_until_it_lands(
    make_redis: Callable[..., EmbeddedRedis],
) -> None:
    server = make_redis()
    settings = worqr.Settings(socket_timeout=SOCKET_TIMEOUT, retry_deadline=5.0)

    async def main() -> None:
        async with worqr.AsyncWorqr(server.url, settings=settings) as client:
            await client.enqueue_many("q", ["a", "b"])
            sleeper = await asyncio.to_thread(freeze, server.url)
            started = time.monotonic()
            assert await client.count_tasks("q") == 2  # timed out, resent, answered
            assert time.monotonic() - started >= FREEZE - 0.6  # it waited out the freeze
            await asyncio.to_thread(sleeper.join)

    asyncio.run(main())
