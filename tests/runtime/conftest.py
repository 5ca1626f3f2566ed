"""Fixtures of the worker runtime tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import worqr
from tests.support.timing import FAST
from tests.support.workers import WorkerFactory, worker_settings


@pytest.fixture
def client(redis_url: str, prefix: str) -> Iterator[worqr.Worqr]:
    """A client of the test's mesh with `FAST` timers, as the workers have."""
    with worqr.Worqr(redis_url, settings=worqr.Settings(prefix=prefix, **FAST)) as wq:
        yield wq


@pytest.fixture
def new_worker(redis_url: str, prefix: str) -> WorkerFactory:
    """``new_worker(client=None, *, url=None, hooks=..., redis=..., **settings)``:
    a `worqr.Worker` of the test's mesh (of the server at ``url``, default the
    test's), with `FAST` client timers updated with ``client`` and the worker
    ``settings``; ``hooks`` and ``redis`` go to the Worker. Run it with
    ``runner.start``."""

    def make(
        client: dict[str, Any] | None = None, *, url: str | None = None, **options: Any
    ) -> worqr.Worker:
        extra = {name: options.pop(name) for name in ("hooks", "redis") if name in options}
        settings = worker_settings(prefix, client, **options)
        return worqr.Worker(url or redis_url, settings=settings, **extra)

    return make
