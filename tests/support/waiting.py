"""Deadline-based waiting for tests: poll a condition instead of sleeping a fixed time."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

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


async def equals(value: Awaitable[object], expected: object) -> bool:
    """``await value == expected``: an `async_wait_until` predicate for a call,
    e.g. ``async_wait_until(lambda: equals(wq.count_tasks("q"), 3))``."""
    return bool(await value == expected)
