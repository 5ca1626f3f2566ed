"""Fixtures of the metrics tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from worqr.metrics.collector import MeshCollector


@pytest.fixture
def collector(redis_url: str, prefix: str) -> Iterator[MeshCollector]:
    """The exporter's collector over the test's mesh."""
    made = MeshCollector.from_url(redis_url, prefix)
    yield made
    made.close()
