"""Deadline-based waiting for tests: poll a condition instead of sleeping a fixed time."""

from __future__ import annotations

import asyncio
import inspect
import time
import urllib.request
from collections.abc import Awaitable, Callable
from typing import TypeVar

import worqr

T = TypeVar("T")


def _timed_out(timeout: float, message: str, last: object) -> AssertionError:
    detail = message or "condition not met"
    return AssertionError(f"{detail} (waited {timeout:g}s; last value {last!r})")


def wait_until(
    predicate: Callable[[], T], timeout: float = 5.0, interval: float = 0.01, message: str = ""
) -> T:
    """Call `predicate` until it returns something truthy and return that, else fail."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, message, result)
        time.sleep(interval)


async def async_wait_until(
    predicate: Callable[[], T | Awaitable[T]],
    timeout: float = 5.0,
    interval: float = 0.01,
    message: str = "",
) -> T:
    """`wait_until` for coroutines; `predicate` may be a plain or an async function."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, message, result)
        await asyncio.sleep(interval)


def scrape_metrics(port: int) -> str | None:
    """The text of ``http://127.0.0.1:port/metrics``, or None while nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
            return str(reply.read().decode())
    except OSError:
        return None


class OnLeaseLost(worqr.Hooks):
    """Hooks that call ``callback(old_worker_id)`` when the client loses its lease."""

    def __init__(self, callback: Callable[[str], object]) -> None:
        self.callback = callback

    def on_lease_lost(self, worker_id: str) -> None:
        self.callback(worker_id)
