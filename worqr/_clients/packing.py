"""hiredis packs the commands of worqr's own asyncio connections.

redis-py packs a sync connection's commands with ``hiredis.pack_command`` when
hiredis is installed (its ``HiredisRespSerializer``), but an asyncio
connection's always in Python. A worker's take carries 30-odd keys and
arguments, and packing them in Python costs about 30 µs a call, against 3 µs in
hiredis: here the asyncio connections that worqr builds itself (standalone
URLs: TCP, TLS, Unix socket) pack as the sync ones do. Clients passed in, and
cluster or Sentinel ones, keep redis-py's packer. Without hiredis (the
``worqr[hiredis]`` extra) nothing changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection


def _hiredis_packer() -> Callable[[tuple[Any, ...]], bytes] | None:
    try:
        module = importlib.import_module("hiredis")
    except ImportError:  # redis-py's pure-Python packer and parser, then
        return None
    return getattr(module, "pack_command", None)


PACK = _hiredis_packer()


class HiredisPacking:
    """A connection mixin: ``pack_command`` by hiredis, byte for byte what
    redis-py's packer writes; anything hiredis refuses (None, bool, a list) goes
    to redis-py's packer, which raises its usual `DataError`."""

    def pack_command(self, *args: Any) -> list[bytes]:
        name = args[0]
        if isinstance(name, str):
            if " " in name:  # 'CLIENT SETINFO': the server wants the words apart
                args = (*name.encode().split(), *args[1:])
        elif b" " in name:
            args = (*name.split(), *args[1:])
        try:
            return [PACK(args)]  # type: ignore[misc]
        except TypeError:  # also bytearray and memoryview, which redis-py takes
            return super().pack_command(*args)  # type: ignore[misc, no-any-return]


class HiredisConnection(HiredisPacking, Connection):
    pass


class HiredisSSLConnection(HiredisPacking, SSLConnection):
    pass


class HiredisUnixConnection(HiredisPacking, UnixDomainSocketConnection):
    pass


_PACKED_BY_HIREDIS: dict[type[Any], type[Any]] = {
    Connection: HiredisConnection,
    SSLConnection: HiredisSSLConnection,
    UnixDomainSocketConnection: HiredisUnixConnection,
}


def pack_with_hiredis(client: Any) -> Any:
    """Make ``client`` (a new asyncio `redis.asyncio.Redis`, no connection made
    yet) pack with hiredis when it is installed; returns it."""
    pool = getattr(client, "connection_pool", None)
    if PACK is not None and pool is not None:
        faster = _PACKED_BY_HIREDIS.get(pool.connection_class)
        if faster is not None:
            pool.connection_class = faster
    return client
