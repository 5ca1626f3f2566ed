"""Fixtures of the job layer's tests: clients of one mesh, and a worker in a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import worqr

QUIET = {"ttl": 60.0, "heartbeat": 20.0}  # no background heartbeat during a test


def job_settings(**changes: Any) -> worqr.JobSettings:
    return worqr.JobSettings(**changes)


@pytest.fixture
def make(redis_url: str, prefix: str) -> Iterator[Callable[..., worqr.Worqr]]:
    """``make(start=False, jobs=JobSettings(...), **settings)``: a client of the
    test's mesh (a started worker with start=True); all closed after the test."""
    made: list[worqr.Worqr] = []

    def build(start: bool = False, **settings: Any) -> worqr.Worqr:
        client = worqr.Worqr(
            redis_url, settings=worqr.Settings(prefix=prefix, **(QUIET | settings))
        )
        made.append(client)
        if start:
            client.start_worker()
        return client

    yield build
    for client in made:
        client.close()


@pytest.fixture
def wq(make: Callable[..., worqr.Worqr]) -> worqr.Worqr:
    return make()


class Running:
    """Workers run in threads, each stopped (and joined) at teardown."""

    def __init__(self) -> None:
        self.threads: list[tuple[worqr.Worker, threading.Thread]] = []

    def start(self, worker: worqr.Worker) -> worqr.Worker:
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        self.threads.append((worker, thread))
        assert worker.wait_started(15), "the worker did not start"
        return worker

    def stop(self) -> None:
        for worker, _ in self.threads:
            worker.stop(now=True)
        for _, thread in self.threads:
            thread.join(timeout=20)


@pytest.fixture
def running() -> Iterator[Running]:
    made = Running()
    try:
        yield made
    finally:
        made.stop()


def fast_worker(redis_url: str, prefix: str, **settings: Any) -> worqr.Worker:
    """A worker with short timers (ttl 1 s, heartbeat 0.2 s, poll 0.5 s unless
    ``poll_interval`` says otherwise); ``jobs``: its JobSettings; ``hooks``: its hooks."""
    client = {"prefix": prefix, "ttl": 1.0, "heartbeat": 0.2, "poll_interval": 0.5}
    for option in ("jobs", "poll_interval"):
        if option in settings:
            client[option] = settings.pop(option)
    hooks = settings.pop("hooks", ())
    worker = {"concurrency": 4, "grace_period": 2.0, **settings}
    return worqr.Worker(
        redis_url,
        settings=worqr.WorkerSettings(client=worqr.Settings(**client), **worker),
        hooks=hooks,
    )
