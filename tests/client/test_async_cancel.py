"""Cancelling a task that awaits an `AsyncWorqr` call always cancels it, even when
redis-py swallows the cancellation (Python 3.11's ``asyncio.wait_for`` does when
a cancel races with a command's write: cpython gh-86296). Before this held, a
worker's loops could miss their cancel on shutdown and the worker hung."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
import redis.asyncio as aioredis

import worqr


class RacingRedis(aioredis.Redis):
    """A real client whose command sending loses a cancel the way ``wait_for``
    does on Python 3.11: the cancel arrives, the command still completes."""

    entered: asyncio.Event | None = None  # set by a test: a command is in the window

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        if self.entered is not None:
            self.entered.set()
        # The window in which the cancel lands; swallowed, as wait_for does when
        # its inner future is done too.
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.2)
        return await super().execute_command(*args, **options)


def test_a_swallowed_cancel_still_cancels_the_call(redis_url: str, prefix: str) -> None:
    async def scenario() -> None:
        client = RacingRedis.from_url(redis_url)
        async with worqr.AsyncWorqr(redis_url, prefix=prefix, redis=client) as wq:
            # count_processes is one plain command, which RacingRedis delays.
            client.entered = asyncio.Event()
            call = asyncio.create_task(wq.count_processes("q"))
            await asyncio.wait_for(client.entered.wait(), 5)  # the cancel lands in the window
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert await wq.count_processes("q") == 0  # the client still works afterwards
        await client.aclose()

    asyncio.run(scenario())


def test_a_loop_of_calls_stops_on_one_cancel(redis_url: str, prefix: str) -> None:
    # The shape of the heartbeat loop and a worker's puller: catch errors, go on.
    async def scenario() -> None:
        client = RacingRedis.from_url(redis_url)
        async with worqr.AsyncWorqr(redis_url, prefix=prefix, redis=client) as wq:

            async def loop() -> None:
                while True:
                    with contextlib.suppress(Exception):
                        await wq.count_processes("q")

            client.entered = asyncio.Event()
            task = asyncio.create_task(loop())
            await asyncio.wait_for(client.entered.wait(), 5)  # the cancel lands in the window
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=5)
            assert task in done and task.cancelled(), "the loop missed its cancel"
        await client.aclose()

    asyncio.run(scenario())
