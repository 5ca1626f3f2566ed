"""A real Redis Cluster for the tests (`worqr.embedded_cluster.EmbeddedCluster`:
``redis-server --cluster-enabled yes`` processes on free loopback ports), with a
slot migration helper (CLUSTER SETSLOT IMPORTING/MIGRATING + MIGRATE + SETSLOT
NODE) and the redirections the nodes answered."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from redis.asyncio.client import PubSub as AsyncPubSub

from tests.support.server_versions import redis_version, requires, server_binary
from tests.support.waiting import wait_until
from worqr.embedded_cluster import EmbeddedCluster, node_client

needs_asyncio_cluster = pytest.mark.skipif(
    not hasattr(AsyncPubSub, "ssubscribe"),
    reason="AsyncWorqr(cluster=True) needs redis-py >= 8.0 (asyncio sharded pub/sub); "
    "`make bench` installs peers that pin an older one",
)
"""For tests of AsyncWorqr or the worker runtime (which runs one) on a cluster."""

SHARDED_PUBSUB = (7, 0)
needs_sharded_pubsub = requires(SHARDED_PUBSUB, "sharded pub/sub: SPUBLISH, PUBSUB SHARDNUMSUB")
"""For cluster tests that look at sharded pub/sub itself (on Redis 6.2 the mesh
falls back to classic pub/sub, which `test_faults` checks on a 6.2 cluster)."""


def sharded_pubsub() -> bool:
    """Whether the session's cluster has sharded pub/sub (what the mesh uses then)."""
    return redis_version(server_binary()) >= SHARDED_PUBSUB


class LocalCluster(EmbeddedCluster):
    """An `EmbeddedCluster` of the tests' server binary (`server_binary`), unless
    told another."""

    def __init__(self, masters: int = 3, **options: Any) -> None:
        super().__init__(masters, **{"binary": server_binary(), **options})

    def migrate_slot(
        self, slot: int, target: int, *, between: Callable[[], object] = lambda: None
    ) -> int:
        """Move ``slot`` to the master on port ``target`` while clients run;
        returns how many keys moved. ``between`` runs after each MIGRATE of two
        keys: the slot is then half moved, and clients meet ASK and TRYAGAIN."""
        source = self.owner(slot)
        assert source != target
        source_id, target_id = self.node_id(source), self.node_id(target)
        moved = 0
        with node_client(source) as src, node_client(target) as dst:
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
            while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 2):
                try:
                    src.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys)
                except redis.RedisError as error:  # the slot stays half moved: say where
                    raise AssertionError(
                        f"MIGRATE of {keys!r} from {source} to {target} failed after "
                        f"{moved} keys: {error!r}"
                    ) from error
                moved += len(keys)
                between()
            # The target first, so the source's MOVED replies point at a node that
            # already serves the slot; then the source, then every other node.
            dst.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        for port in self.ports:
            if port not in (source, target):
                with node_client(port) as other:
                    other.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        # Every master must now say so: one that gossip turned back (a higher config
        # epoch claiming the slot) would drop the keys that moved.
        wait_until(
            lambda: all(self.owner_seen_by(port, slot) == target for port in self.ports),
            timeout=5,
            message=f"the masters do not all see slot {slot} on {target}",
        )
        return moved

    def owner_seen_by(self, port: int, slot: int) -> int | None:
        """The port of the master serving ``slot`` in the slot map of node ``port``."""
        with node_client(port) as client:
            for start, end, master, *_ in client.execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return int(master[1])
        return None

    def redirects(self) -> Counter[str]:
        """Redirections the nodes have answered so far: MOVED, ASK, TRYAGAIN."""
        total: Counter[str] = Counter()
        for port in self.ports:
            with node_client(port) as client:
                stats = client.info("errorstats")
            for kind in ("MOVED", "ASK", "TRYAGAIN"):
                total[kind] += int(stats.get(f"errorstat_{kind}", {}).get("count", 0))
        return total


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalCluster]:
    """The session's 3-master Redis Cluster. Tests use a fresh prefix; a test that
    moves a slot moves only its own queue's slot, and puts it back."""
    cluster = LocalCluster(3)
    try:
        yield cluster.start()
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def redis_cluster_url(redis_cluster: LocalCluster) -> str:
    return redis_cluster.url
