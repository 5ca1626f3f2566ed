"""Shared pieces of the worker runtime tests: fast settings, a runner that
keeps workers in threads and always stops them, and a hooks recorder."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

import worqr

FAST = {"ttl": 1.0, "heartbeat": 0.2, "poll_interval": 0.5, "retry_deadline": 2.0}


def settings(
    prefix: str, client: dict[str, Any] | None = None, **changes: Any
) -> worqr.WorkerSettings:
    options = {**FAST, **(client or {})}
    return worqr.WorkerSettings(client=worqr.Settings(prefix=prefix, **options), **changes)


class Runner:
    """Runs workers in threads and stops them all at the end of a test."""

    def __init__(self) -> None:
        self.threads: list[tuple[worqr.Worker, threading.Thread]] = []

    def start(self, worker: worqr.Worker) -> worqr.Worker:
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        self.threads.append((worker, thread))
        assert worker.wait_started(10), "worker did not start"
        return worker

    def stop(self, worker: worqr.Worker, timeout: float = 15, *, now: bool = False) -> None:
        for candidate, thread in self.threads:
            if candidate is worker:
                worker.stop(now=now)
                thread.join(timeout)
                assert not thread.is_alive(), "worker did not stop"


@pytest.fixture
def runner() -> Iterator[Runner]:
    runner = Runner()
    yield runner
    for worker, thread in runner.threads:
        worker.stop(now=True)
        thread.join(15)


@pytest.fixture
def client(redis_url: str, prefix: str) -> Iterator[worqr.Worqr]:
    with worqr.Worqr(redis_url, settings=worqr.Settings(prefix=prefix, **FAST)) as wq:
        yield wq


class Recorder(worqr.WorkerHooks):
    """Counts every hook call as (event, queue); thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[tuple[str, str]] = Counter()
        self.dequeues: list[tuple[str, int, int]] = []

    def _add(self, event: str, queue: str = "") -> None:
        with self.lock:
            self.counts[event, queue] += 1

    def total(self, event: str) -> int:
        with self.lock:
            return sum(n for (name, _), n in self.counts.items() if name == event)

    def ended(self) -> int:
        return sum(self.total(e) for e in ("finished", "failed", "retried", "cancelled", "fenced"))

    def on_started(self, queue: str) -> None:
        self._add("started", queue)

    def on_finished(self, queue: str, seconds: float) -> None:
        self._add("finished", queue)

    def on_failed(self, queue: str, seconds: float) -> None:
        self._add("failed", queue)

    def on_retried(self, queue: str) -> None:
        self._add("retried", queue)

    def on_cancelled(self, queue: str) -> None:
        self._add("cancelled", queue)

    def on_fenced(self, queue: str) -> None:
        self._add("fenced", queue)

    def on_lease_lost(self, worker_id: str) -> None:
        self._add("lease_lost")

    def on_dequeue(self, queue: str, asked: int, got: int) -> None:
        with self.lock:
            self.dequeues.append((queue, asked, got))

    def on_wakeup(self, queue: str) -> None:
        self._add("wakeup", queue)
