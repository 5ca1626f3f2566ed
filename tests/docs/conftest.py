"""Fixtures of the docs tests: the session's 3-master Redis Cluster, for the
blocks written for one (``cluster`` in their fence; started only when such a
test runs)."""

from __future__ import annotations

from tests.support.cluster import redis_cluster, redis_cluster_url

__all__ = ["redis_cluster", "redis_cluster_url"]  # session fixtures
