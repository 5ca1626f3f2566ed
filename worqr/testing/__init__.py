"""worqr's pytest plugin for applications' tests (the ``pytest11`` entry point
``worqr``): fixtures for a throwaway Redis and a client on a fresh prefix, and
`drain`, which runs a worker's handlers in the test's process until its queues
have run dry and reports what happened (docs/testing.md).

Loading the plugin starts nothing: the server starts when a test first asks
for `worqr_redis`. ``import worqr`` never imports this module (nor pytest).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from .._clients.sync_client import Worqr
from ..embedded import EmbeddedRedis
from .drain import DrainTimeoutError, drain, drain_async
from .report import DrainReport, RunRecord

__all__ = [
    "DrainReport",
    "DrainTimeoutError",
    "RunRecord",
    "drain",
    "drain_async",
]


@pytest.fixture(scope="session")
def worqr_redis() -> Iterator[EmbeddedRedis]:
    """A throwaway real Redis for the test session: ``redis-server`` from PATH,
    else the one bundled with ``worqr[embedded]``; its address is ``.url``."""
    with EmbeddedRedis() as server:
        yield server


@pytest.fixture
def worqr_prefix() -> str:
    """A key prefix of this test's own: tests never see each other's queues."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def worqr_client(worqr_redis: EmbeddedRedis, worqr_prefix: str) -> Iterator[Worqr]:
    """A `worqr.Worqr` of `worqr_redis` on `worqr_prefix`, closed after the test.
    Point the worker under test at the same place with
    ``worker.configure(url=worqr_redis.url, prefix=worqr_prefix)``."""
    client = Worqr(worqr_redis.url, prefix=worqr_prefix)
    try:
        yield client
    finally:
        client.close()
