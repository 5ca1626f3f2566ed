"""What every system's adapter provides: a producer and a worker command line.

Workers read their settings from the environment the harness sets:
``BENCH_REDIS_URL``, ``BENCH_RECORD_DIR`` (see `benchmarks.record`) and
``BENCH_HOLD_SECONDS``.
"""

from __future__ import annotations

import asyncio
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..harness import python, version_of
from ..record import stamp

QUEUE = "bench"
DEFAULT_URL = "redis://127.0.0.1:6379/0"


def redis_url() -> str:
    """The URL a worker process connects to."""
    return os.environ.get("BENCH_REDIS_URL", DEFAULT_URL)


class Producer(ABC):
    """Enqueues the benchmark task (argument: a 20-character string)."""

    @abstractmethod
    def enqueue_each(self, args: Sequence[str]) -> None:
        """One call per task."""

    @abstractmethod
    def enqueue_bulk(self, args: Sequence[str]) -> None:
        """The system's batch API (or the closest thing; see `Adapter.bulk_api`)."""

    @abstractmethod
    def enqueue_paced(self, count: int, interval: float) -> None:
        """One call per task, task i sent at start + i * interval, carrying its
        send time (`benchmarks.record.stamp`)."""

    def close(self) -> None:
        return None


class SyncProducer(Producer):
    @abstractmethod
    def enqueue_one(self, arg: str) -> None: ...

    def enqueue_each(self, args: Sequence[str]) -> None:
        enqueue = self.enqueue_one
        for arg in args:
            enqueue(arg)

    def enqueue_bulk(self, args: Sequence[str]) -> None:
        self.enqueue_each(args)

    def enqueue_paced(self, count: int, interval: float) -> None:
        start = time.monotonic()
        for i in range(count):
            delay = start + i * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self.enqueue_one(stamp())


class AsyncProducer(Producer):
    """Runs each whole batch of calls inside one event loop, as an asyncio
    application would (no loop start-up per task)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run(self, coroutine: Awaitable[Any]) -> Any:
        return self.loop.run_until_complete(coroutine)

    @abstractmethod
    async def enqueue_one(self, arg: str) -> None: ...

    async def _each(self, args: Sequence[str]) -> None:
        for arg in args:
            await self.enqueue_one(arg)

    def enqueue_each(self, args: Sequence[str]) -> None:
        self.run(self._each(args))

    async def _bulk(self, args: Sequence[str]) -> None:
        await self._each(args)

    def enqueue_bulk(self, args: Sequence[str]) -> None:
        self.run(self._bulk(args))

    async def _paced(self, count: int, interval: float) -> None:
        start = time.monotonic()
        for i in range(count):
            delay = start + i * interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await self.enqueue_one(stamp())

    def enqueue_paced(self, count: int, interval: float) -> None:
        self.run(self._paced(count, interval))

    async def aclose(self) -> None:
        return None

    def close(self) -> None:
        self.run(self.aclose())
        self.loop.close()


class Adapter(ABC):
    """One system (or one worker model of a system) under test."""

    name: str = ""
    distributions: tuple[str, ...] = ()  # reported versions
    model: str = ""  # the worker model, as the report describes it
    bulk_api: str = "loop of single calls (no batch API)"
    drain_share: float = 1.0  # fraction of the drain N this system gets (slow ones)
    recovery_note: str = ""

    def versions(self) -> dict[str, str | None]:
        return {name: version_of(name) for name in self.distributions}

    @abstractmethod
    def producer(self, url: str) -> Producer: ...

    @abstractmethod
    def worker_command(self, url: str) -> list[str]:
        """One worker instance (one process tree) running one task at a time or
        the system's default concurrency; the harness starts W of them."""

    def module_command(self, module: str, *args: str) -> list[str]:
        return [python(), "-m", module, *args]

    def prepare(self, url: str) -> None:  # noqa: B027 - optional hook
        """Run once before each workload run on an empty server."""


AdapterFactory = Callable[[], Adapter]
