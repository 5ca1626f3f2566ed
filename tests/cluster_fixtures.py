"""A real Redis Cluster for the tests: ``redis-server --cluster-enabled yes``
processes on free loopback ports, slots assigned and nodes introduced with
CLUSTER ADDSLOTS / MEET (no redis-cli needed), and a slot migration helper
(CLUSTER SETSLOT IMPORTING/MIGRATING + MIGRATE + SETSLOT NODE)."""

from __future__ import annotations

import random
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from worqr.embedded import EmbeddedRedis

SLOTS = 16384
READY_TIMEOUT = 20.0


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000, Redis's rule) is free too."""
    for _ in range(1000):
        port = random.randint(20000, 45000)
        if _bindable(port) and _bindable(port + 10000):
            return port
    raise AssertionError("no free port pair for a cluster node")


def _client(port: int) -> redis.Redis:
    return redis.Redis(port=port, socket_timeout=5, retry=Retry(NoBackoff(), 0))


class LocalCluster:
    """``masters`` redis-server processes forming one cluster on 127.0.0.1."""

    def __init__(self, masters: int = 3, binary: str | None = None) -> None:
        self.servers = [
            EmbeddedRedis(
                port=cluster_port(),
                binary=binary,
                extra_args=[
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "5000",
                    "--appendonly", "no",
                ]
            )
            for _ in range(masters)
        ]  # fmt: skip

    @property
    def url(self) -> str:
        """A URL of one node: a cluster client discovers the others."""
        return f"redis://127.0.0.1:{self.servers[0].port}"

    @property
    def ports(self) -> list[int]:
        return [server.port for server in self.servers]

    def start(self) -> LocalCluster:
        for server in self.servers:
            server.start()
        clients = [_client(port) for port in self.ports]
        try:
            per = SLOTS // len(clients)
            for i, client in enumerate(clients):
                last = SLOTS - 1 if i == len(clients) - 1 else (i + 1) * per - 1
                client.execute_command("CLUSTER", "ADDSLOTS", *range(i * per, last + 1))
            for client in clients[1:]:
                client.execute_command("CLUSTER", "MEET", "127.0.0.1", self.ports[0])
            self.wait_ready(clients)
        finally:
            for client in clients:
                client.close()
        return self

    def wait_ready(self, clients: list[redis.Redis]) -> None:
        """Until every node says cluster_state:ok and knows every node (a deadline)."""
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                if all(self._node_ready(client) for client in clients):
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"cluster not ready in {READY_TIMEOUT:g}s")
            time.sleep(0.05)

    def _node_ready(self, client: redis.Redis) -> bool:
        info = client.execute_command("CLUSTER", "INFO")
        text = info.decode() if isinstance(info, bytes) else str(info)
        fields = dict(line.split(":", 1) for line in text.split() if ":" in line)
        return (
            fields.get("cluster_state") == "ok"
            and int(fields.get("cluster_known_nodes", 0)) == len(self.servers)
            and int(fields.get("cluster_slots_ok", 0)) == SLOTS
        )

    def client(self, port: int) -> redis.Redis:
        return _client(port)

    def node_id(self, port: int) -> str:
        with _client(port) as client:
            return str(client.execute_command("CLUSTER", "MYID").decode())

    def owner(self, slot: int) -> int:
        """The port of the master serving ``slot`` (per the first node's view)."""
        with _client(self.ports[0]) as client:
            for start, end, master, *_ in client.execute_command("CLUSTER", "SLOTS"):
                if start <= slot <= end:
                    return int(master[1])
        raise AssertionError(f"slot {slot} is not served")

    def migrate_slot(
        self, slot: int, target: int, *, between: Callable[[], object] = lambda: None
    ) -> int:
        """Move ``slot`` to the node on port ``target`` while clients run; returns
        how many keys moved. ``between`` runs after each MIGRATE batch (the slot is
        then half moved: clients get ASK and TRYAGAIN)."""
        source = self.owner(slot)
        assert source != target
        source_id, target_id = self.node_id(source), self.node_id(target)
        moved = 0
        with _client(source) as src, _client(target) as dst:
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
            while True:
                keys = src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 2)
                if not keys:
                    break
                src.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys)
                moved += len(keys)
                between()
            # The target first, so the source's MOVED replies point at a node that
            # already serves the slot; then every other node.
            dst.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
            src.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        for port in self.ports:
            if port not in (source, target):
                with _client(port) as other:
                    other.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        return moved

    def redirects(self) -> Counter[str]:
        """Redirections the nodes have answered so far: MOVED, ASK, TRYAGAIN."""
        total: Counter[str] = Counter()
        for port in self.ports:
            with _client(port) as client:
                stats = client.info("errorstats")
            for kind in ("MOVED", "ASK", "TRYAGAIN"):
                total[kind] += int(stats.get(f"errorstat_{kind}", {}).get("count", 0))
        return total

    def close(self) -> None:
        for server in self.servers:
            server.close()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalCluster]:
    """The session's 3-master Redis Cluster. Tests use a fresh prefix; a test that
    moves slots moves only its own queue's slot."""
    cluster = LocalCluster(3)
    try:
        yield cluster.start()
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def redis_cluster_url(redis_cluster: LocalCluster) -> str:
    return redis_cluster.url
