"""Which command the scripts publish notifications with.

On a Redis Cluster, ``SPUBLISH`` (sharded pub/sub, Redis >= 7) sends a
notification only to the shard that owns the queue's slot, where its workers
subscribe with ``SSUBSCRIBE``; a classic ``PUBLISH`` is broadcast to every node of
the cluster. Standalone Redis keeps classic ``PUBLISH``. The client decides once,
from ``INFO server``, and passes the command to every script that publishes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from redis.exceptions import ResponseError

from .calls import Plan, command

logger = logging.getLogger("worqr")

CLASSIC = "PUBLISH"
SHARDED = "SPUBLISH"


def _versions(reply: Any) -> Iterator[tuple[int, ...]]:
    """Every ``redis_version`` in an INFO reply: parsed (a dict), raw (bytes), or
    one of either per node (a dict keyed by node name)."""
    if isinstance(reply, bytes | str):
        raw = reply.decode() if isinstance(reply, bytes) else reply
        reply = dict(line.split(":", 1) for line in raw.splitlines() if ":" in line)
    if not isinstance(reply, dict):
        return
    if "redis_version" in reply:
        version = reply["redis_version"]
        version = version.decode() if isinstance(version, bytes) else str(version)
        yield tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
        return
    for value in reply.values():  # one reply per node
        yield from _versions(value)


def cluster_publish_command() -> Plan[str]:
    """``SPUBLISH`` when the server has sharded pub/sub, else ``PUBLISH``.

    A user not allowed to run INFO (an ACL) gets classic pub/sub, which works on
    every version."""
    try:
        reply = yield command("INFO", "server")
    except ResponseError as error:
        logger.info("cannot read the Redis version (%s): classic pub/sub", error)
        return CLASSIC
    versions = list(_versions(reply))
    return SHARDED if versions and min(versions) >= (7, 0) else CLASSIC
