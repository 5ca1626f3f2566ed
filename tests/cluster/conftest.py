"""Fixtures of the cluster tests: the session's 3-master Redis Cluster."""

from __future__ import annotations

from tests.support.cluster import redis_cluster, redis_cluster_url

__all__ = ["redis_cluster", "redis_cluster_url"]  # session fixtures
