"""The pub/sub connection has one user at a time: subscription changes made by a
plan (on, start_work, stop_work, close) never race the listener reading or
reconnecting the same socket.

They used to: a subscribe sent while the listener reconnected took the other's
handshake reply, and both waited for ever (a subscriber socket has no read
timeout); `close()` hung at teardown of a Redis-down test. Each scenario here
runs under a deadline, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

import worqr
from tests.support.timing import quiet
from worqr.embedded import EmbeddedRedis

pytestmark = pytest.mark.fault

QUEUES = [f"q{i}" for i in range(5)]
DEADLINE = 90.0  # the whole scenario; a round takes milliseconds when nothing hangs


@pytest.fixture
def pubsub_killer(make_redis: Callable[..., EmbeddedRedis]) -> Iterator[EmbeddedRedis]:
    """A private server whose pub/sub connections are killed every few ms."""
    server = make_redis()
    raw = redis.Redis.from_url(server.url)
    stop = threading.Event()
    kills = [0]

    def kill() -> None:
        while not stop.is_set():
            with contextlib.suppress(redis.RedisError):
                kills[0] += int(raw.client_kill_filter(_type="pubsub"))
            stop.wait(0.002)

    thread = threading.Thread(target=kill, name="pubsub-killer", daemon=True)
    thread.start()
    yield server
    stop.set()
    thread.join(10)
    raw.close()
    assert kills[0] > 10, "the killer never hit a pub/sub connection"


def run_with_deadline(scenario: Callable[[], None], deadline: float = DEADLINE) -> None:
    failures: list[BaseException] = []

    def body() -> None:
        try:
            scenario()
        except BaseException as error:  # reported below, in the test's thread
            failures.append(error)

    thread = threading.Thread(target=body, name="scenario", daemon=True)
    thread.start()
    thread.join(deadline)
    assert not thread.is_alive(), f"hung: not done after {deadline:g}s"
    if failures:
        raise failures[0]


def test_subscription_changes_while_the_listener_reconnects(
    pubsub_killer: EmbeddedRedis, prefix: str
) -> None:
    settings = quiet(prefix)

    def scenario() -> None:
        for _ in range(30):
            wq = worqr.Worqr(pubsub_killer.url, settings=settings)
            try:
                wq.start_worker()
                for queue in QUEUES:
                    wq.on(queue, lambda event, message: None)
                    wq.start_work(queue)
                for queue in QUEUES:
                    wq.stop_work(queue)
            finally:
                wq.close()
            assert not [t for t in wq._threads if t.is_alive()], "a thread outlived close()"

    run_with_deadline(scenario)


@pytest.mark.slow
def test_async_subscription_changes_while_the_listener_reconnects(
    pubsub_killer: EmbeddedRedis, prefix: str
) -> None:
    settings = quiet(prefix)

    async def rounds() -> None:
        for _ in range(30):
            async with worqr.AsyncWorqr(pubsub_killer.url, settings=settings) as wq:
                await wq.start_worker()
                for queue in QUEUES:
                    await wq.on(queue, lambda event, message: None)
                    await wq.start_work(queue)
                for queue in QUEUES:
                    await wq.stop_work(queue)

    run_with_deadline(lambda: asyncio.run(rounds()))


def test_close_while_redis_comes_back_and_the_listener_reconnects(
    fresh_redis: EmbeddedRedis, prefix: str
) -> None:
    """Redis goes down under a worker; close() starts while it is down and its
    goodbye (requeue, then unsubscribe) goes through as Redis comes back, while
    the listener reconnects. close() returns in time and leaves no thread."""
    settings = quiet(prefix, retry_deadline=20)
    down = threading.Event()

    def observe(event: str, fields: dict[str, Any]) -> None:
        if event == "redis_down" and fields.get("what") == "listener":
            down.set()

    def scenario() -> None:
        wq = worqr.Worqr(fresh_redis.url, settings=settings)
        wq.add_observer(observe)
        wq.start_worker()
        for queue in QUEUES:
            wq.on(queue, lambda event, message: None)
            wq.start_work(queue)
        wq.enqueue("q0", "held")
        assert wq.dequeue("q0") is not None
        fresh_redis.kill()
        assert down.wait(10), "the listener never noticed"
        restart = threading.Timer(0.5, fresh_redis.start)
        restart.start()
        started = time.monotonic()
        wq.close()  # retried until Redis is back (append-only file: nothing lost)
        restart.join()
        assert time.monotonic() - started < 15
        assert not [t for t in wq._threads if t.is_alive()], "a thread outlived close()"
        with worqr.Worqr(fresh_redis.url, settings=settings) as check:
            assert check.get_workers() == []  # it said goodbye
            assert check.count_tasks("q0") == 1  # and handed its task back

    run_with_deadline(scenario)
