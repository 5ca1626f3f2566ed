"""Fixtures of the worker runtime tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import worqr
from tests.support.timing import FAST
from tests.support.workers import Runner


@pytest.fixture
def runner() -> Iterator[Runner]:
    """Runs workers in threads (`Runner.start`); every one stopped after the test."""
    made = Runner()
    yield made
    made.stop_all()


@pytest.fixture
def client(redis_url: str, prefix: str) -> Iterator[worqr.Worqr]:
    """A client of the test's mesh with `FAST` timers, as the workers have."""
    with worqr.Worqr(redis_url, settings=worqr.Settings(prefix=prefix, **FAST)) as wq:
        yield wq
