"""The asyncio connections worqr builds pack commands with hiredis (the
``worqr[hiredis]`` extra), byte for byte what redis-py's own packer writes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
from redis.exceptions import DataError

import worqr
from worqr._clients import packing
from worqr._clients.packing import HiredisConnection, pack_with_hiredis

COMMANDS: list[tuple[Any, ...]] = [
    ("SET", "key", "value"),
    ("EVALSHA", "a" * 40, 3, "{q}:tasks", "{q}:idle", b"{q}:stats", 7, 0, -12, 2**70),
    ("HSET", "h", "field", b"\x00\xff\r\n binary", "ünïcode ✓", 1.5, 0.1, 1e20),
    ("SET", "k", b""),
    ("CLIENT SETNAME", "worqr"),  # a name of two words goes as two arguments
    (b"CONFIG GET", b"maxmemory"),
    ("SET", "k", bytearray(b"from a bytearray")),
    ("SET", "k", memoryview(b"from a memoryview")),
    ("RPUSH", "big", "x" * 100_000),
]


def redis_py_bytes(args: tuple[Any, ...]) -> bytes:
    return b"".join(bytes(part) for part in Connection().pack_command(*args))


@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: str(args[0]))
def test_hiredis_packs_what_redis_py_packs(args: tuple[Any, ...]) -> None:
    """The same bytes, or the same refusal (redis-py 5.0 refuses a bytearray)."""
    try:
        expected = redis_py_bytes(args)
    except DataError:
        with pytest.raises(DataError):
            HiredisConnection().pack_command(*args)
        return
    packed = HiredisConnection().pack_command(*args)
    assert b"".join(bytes(part) for part in packed) == expected


@pytest.mark.parametrize("bad", [None, True, ["a list"], {"a": 1}])
def test_what_redis_py_refuses_is_refused_the_same_way(bad: object) -> None:
    with pytest.raises(DataError, match="Invalid input of type"):
        Connection().pack_command("SET", "k", bad)
    with pytest.raises(DataError, match="Invalid input of type"):
        HiredisConnection().pack_command("SET", "k", bad)


def test_a_client_built_from_a_url_packs_with_hiredis(redis_url: str, prefix: str) -> None:
    async def main() -> None:
        async with worqr.AsyncWorqr(redis_url, prefix=prefix) as client:
            assert client._redis.connection_pool.connection_class is HiredisConnection
            await client.start_worker()
            assert await client.enqueue_many("packed", ["ünïcode ✓"]) == 1  # over it
            [process] = await client.dequeue_many("packed", 1)
            assert process.task == "ünïcode ✓"
            assert await client.finish_process(process)

    asyncio.run(main())


def test_each_kind_of_connection_gets_its_hiredis_twin() -> None:
    for stock in (Connection, SSLConnection, UnixDomainSocketConnection):
        client = aioredis.Redis(connection_pool=aioredis.ConnectionPool(connection_class=stock))
        twin = pack_with_hiredis(client).connection_pool.connection_class
        assert issubclass(twin, stock) and twin is not stock
        assert twin.pack_command is not stock.pack_command


def test_without_hiredis_redis_py_packs_and_worqr_works(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, prefix: str
) -> None:
    monkeypatch.setattr(packing, "PACK", None)
    assert pack_with_hiredis(aioredis.Redis()).connection_pool.connection_class is Connection

    async def main() -> None:
        async with worqr.AsyncWorqr(redis_url, prefix=prefix) as client:
            assert client._redis.connection_pool.connection_class is Connection
            await client.start_worker()
            assert await client.enqueue_many("plain", ["a task"]) == 1
            [process] = await client.dequeue_many("plain", 1)
            assert process.task == "a task" and await client.finish_process(process)

    asyncio.run(main())


def test_a_client_passed_in_keeps_its_connections(redis_url: str, prefix: str) -> None:
    async def main() -> None:
        passed = aioredis.Redis.from_url(redis_url)
        async with worqr.AsyncWorqr(redis_url, redis=passed, prefix=prefix) as client:
            assert client._redis.connection_pool.connection_class is Connection
            assert await client.enqueue_many("kept", ["a task"]) == 1
        await passed.aclose()

    asyncio.run(main())
