"""Fixtures of the fault scenarios."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support.fault_harness import Checker, Scenario, seeded
from worqr.embedded import EmbeddedRedis


@pytest.fixture
def scenario(
    make_redis: Callable[..., EmbeddedRedis], tmp_path: Path
) -> Iterator[Callable[..., Scenario]]:
    """``scenario(name, **server_options)``: the scenario's seed (printed, see
    `seeded`), a private server started with ``server_options``, a fresh
    prefix, a raw client of the server (closed after the test), the checker of
    the invariants and the execution log's path."""
    opened: list[redis.Redis] = []

    def start(name: str, **server_options: Any) -> Scenario:
        seed, rng = seeded(name)
        server = make_redis(**server_options)
        prefix = f"f{uuid.uuid4().hex[:10]}"
        client = redis.Redis.from_url(server.url)
        opened.append(client)
        checker = Checker(client, prefix)
        return Scenario(seed, rng, server, prefix, client, checker, tmp_path / "executions.jsonl")

    yield start
    for client in opened:
        client.close()
