"""After Redis restarts, `AsyncWorqr`'s listener reconnects and resubscribes at
once, not at the next pub/sub health check: wake-ups reach it within a second.

(It used to be handed redis-py's sync retry object, so the asyncio pub/sub
never ran the callback that reconnects a broken connection.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import worqr
from tests.support.waiting import async_wait_until
from worqr.embedded import EmbeddedRedis

pytestmark = pytest.mark.fault


def test_listener_hears_wake_ups_right_after_a_redis_restart(
    fresh_redis: EmbeddedRedis, prefix: str
) -> None:
    async def scenario() -> None:
        # No fallback poll and no health check within the test: only a prompt
        # reconnect can deliver the events below.
        settings = worqr.Settings(prefix=prefix, poll_interval=60)
        events: list[tuple[str, Any]] = []
        async with (
            worqr.AsyncWorqr(fresh_redis.url, settings=settings) as wq,
            worqr.AsyncWorqr(fresh_redis.url, prefix=prefix) as producer,
        ):
            await wq.start_worker()
            await wq.on("q", lambda event, message: events.append((event, message)))
            await wq.start_work("q")
            assert await wq.dequeue("q") is None  # empty: wq waits in the idle set
            await async_wait_until(lambda: ("work", 0) in events)  # subscribed

            fresh_redis.kill()
            fresh_redis.start()  # the append-only file keeps wq registered and idle
            events.clear()
            await async_wait_until(
                lambda: ("work", 0) in events, timeout=5, message="no resubscribe"
            )
            await producer.enqueue("q", "task")
            await async_wait_until(lambda: ("work", 1) in events, timeout=3)

    asyncio.run(scenario())
