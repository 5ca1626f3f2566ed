"""A throwaway Redis Cluster on 127.0.0.1 for tests, benchmarks and trials:
``redis-server --cluster-enabled yes`` child processes, slots split evenly and
nodes introduced with CLUSTER ADDSLOTS and CLUSTER MEET (no ``redis-cli``).

    with EmbeddedCluster(masters=3) as cluster:
        wq = worqr.Worqr(cluster.url, cluster=True)

No replicas and no persistence: it is for trying worqr on a cluster, not for
keeping data.
"""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ._checks import count
from .embedded import EmbeddedRedis, Throwaway

SLOTS = 16384
READY_TIMEOUT = 20.0
BUS_OFFSET = 10000  # Redis's rule: a node's cluster bus listens on its port + 10000


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _ephemeral_low() -> int:
    """The first port the kernel hands to outgoing connections (Linux's default
    where /proc does not say)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ranges:
            return int(ranges.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too. Both stay
    below the ephemeral range when it leaves room: a port found free there can be
    taken by any outgoing connection before redis-server binds it."""
    below = _ephemeral_low() - 1 - BUS_OFFSET  # the highest port whose bus port is below it
    lowest, highest = (10000, below) if below > 11000 else (20000, 65535 - BUS_OFFSET)
    for _ in range(1000):
        port = random.randint(lowest, highest)
        if _bindable(port) and _bindable(port + BUS_OFFSET):
            return port
    raise RuntimeError("no free pair of ports for a cluster node")


def node_client(port: int) -> redis.Redis:
    """A plain client of one node (no resends: a test sees every failure)."""
    return redis.Redis(port=port, socket_timeout=5, retry=Retry(NoBackoff(), 0))


def command(client: redis.Redis, *args: Any) -> Any:
    return client.execute_command(*args)  # type: ignore[no-untyped-call]


class EmbeddedCluster(Throwaway):
    """``masters`` redis-server processes forming one cluster, each with
    ``replicas`` replicas; use as a context manager or call `start()` and `close()`.

    ``node_timeout_ms`` is how long a master may be unreachable before its
    replica takes over (Redis's ``cluster-node-timeout``)."""

    def __init__(
        self,
        masters: int = 3,
        *,
        replicas: int = 0,
        node_timeout_ms: int = 5000,
        binary: str | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        count("masters", masters, low=1)
        count("replicas", replicas)
        options = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        options += ["--cluster-node-timeout", str(node_timeout_ms), *extra_args]
        self.servers = [
            EmbeddedRedis(port=cluster_port(), binary=binary, extra_args=options)
            for _ in range(masters)
        ]
        self.replica_servers = [
            EmbeddedRedis(port=cluster_port(), binary=binary, extra_args=options)
            for _ in range(masters * replicas)
        ]
        self._replicas = replicas

    @property
    def url(self) -> str:
        """The URL of one node: a cluster client discovers the others."""
        return f"redis://127.0.0.1:{self.servers[0].port}"

    @property
    def ports(self) -> list[int]:
        """The ports of the masters the cluster started with."""
        return [server.port for server in self.servers]

    @property
    def all_servers(self) -> list[EmbeddedRedis]:
        return self.servers + self.replica_servers

    def start(self) -> EmbeddedCluster:
        """Start every node, assign the slots, introduce the nodes, attach the
        replicas and wait (with a deadline) until every node reports
        ``cluster_state:ok`` and every replica is in sync."""
        for server in self.all_servers:
            server.start()
        clients = [node_client(server.port) for server in self.all_servers]
        masters = clients[: len(self.servers)]
        try:
            per = SLOTS // len(masters)
            for i, client in enumerate(masters):
                # A distinct config epoch per master before the nodes meet (what
                # `redis-cli --cluster create` does): left at 0, the masters collide
                # and resolve it by bumping epochs over the next seconds, and a bump
                # racing a resharding (SETSLOT NODE) can hand a moved slot back to
                # its old owner, which then drops the keys the new one received.
                command(client, "CLUSTER", "SET-CONFIG-EPOCH", i + 1)
                last = SLOTS - 1 if i == len(masters) - 1 else (i + 1) * per - 1
                command(client, "CLUSTER", "ADDSLOTS", *range(i * per, last + 1))
            for client in clients[1:]:
                command(client, "CLUSTER", "MEET", "127.0.0.1", self.ports[0])
            self._wait(lambda: all(self._node_ready(client) for client in clients))
            ids = [self.node_id(port) for port in self.ports]
            for i, client in enumerate(clients[len(masters) :]):
                command(client, "CLUSTER", "REPLICATE", ids[i % len(ids)])
            self._wait(lambda: all(self._in_sync(client) for client in masters))
        finally:
            for client in clients:
                client.close()
        return self

    def _wait(self, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                if ready():
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster was not ready within {READY_TIMEOUT:g}s")
            time.sleep(0.05)

    def _node_ready(self, client: redis.Redis) -> bool:
        info = command(client, "CLUSTER", "INFO")
        text = info.decode() if isinstance(info, bytes) else str(info)
        fields = dict(line.split(":", 1) for line in text.split() if ":" in line)
        return (
            fields.get("cluster_state") == "ok"
            and int(fields.get("cluster_known_nodes", 0)) == len(self.all_servers)
            and int(fields.get("cluster_slots_ok", 0)) == SLOTS
        )

    def _in_sync(self, master: redis.Redis) -> bool:
        info = master.info("replication")
        online = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
        return len(online) == self._replicas and all(v.get("state") == "online" for v in online)

    def node_id(self, port: int) -> str:
        with node_client(port) as client:
            reply = command(client, "CLUSTER", "MYID")
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def owner(self, slot: int) -> int:
        """The port of the master serving ``slot``, as the first running node
        that answers sees it (a node that was killed is skipped)."""
        for server in self.all_servers:
            if server.pid is None:
                continue
            try:
                with node_client(server.port) as client:
                    ranges = command(client, "CLUSTER", "SLOTS")
            except redis.RedisError:
                continue
            for start, end, master, *_ in ranges:
                if start <= slot <= end:
                    return int(master[1])
        raise RuntimeError(f"slot {slot} is not served")

    def server(self, port: int) -> EmbeddedRedis:
        """The node listening on ``port`` (to kill, pause or restart it)."""
        return next(server for server in self.all_servers if server.port == port)

    def close(self) -> None:
        """Stop every node and remove its data directory."""
        for server in self.all_servers:
            server.close()
