"""The blocking way of each thing the executor (`sync_exec`) and the cluster
subscriber (`shards`) do differently by colour: the same names and signatures
as `async_seams`, less ``async``, for the copies `tools/unasync.py` generates.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

import redis as redis_py
from redis.cluster import RedisCluster

from .._core.calls import Subscribe
from .._core.pinned import Command, Send, target
from .connect import cluster_node_client

T = TypeVar("T")

Client: TypeAlias = redis_py.Redis | RedisCluster
"""A command client the executor runs plans on."""
Cluster = RedisCluster
Waiter = threading.Event
"""What a `Listen` request gets: the core's listener sets it (from its thread)."""
Subscriber: TypeAlias = Callable[[Subscribe], None]
"""Carries out a `Subscribe` request on the client's subscriber connection."""


def honour_cancel(call: T) -> T:
    """``call``'s reply as it is: a blocking call (already returned) cannot
    swallow a cancel."""
    return call


class _NoTimer:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    def expired(self) -> bool:
        return False


def timer(limit: float) -> _NoTimer:
    """No timer: a sync client's connections bound each read and write with
    their own socket timeout (the sync executor is given no command timeout)."""
    return _NoTimer()


def wait_signal(waiter: threading.Event, timeout: float) -> None:
    """Wait until ``waiter`` is set or ``timeout`` seconds pass."""
    waiter.wait(timeout)


def pipeline(client: Any, sent: list[Command]) -> list[Any]:
    """Send commands back to back without MULTI (on a cluster client: each to
    its key's node); the replies, with the errors Redis answered in place."""
    with client.pipeline(transaction=False) as pipe:
        for args in sent:
            pipe.execute_command(*args)
        return pipe.execute(raise_on_error=False)  # type: ignore[no-any-return]


def ready(cluster: RedisCluster) -> None:
    """Nothing to do: a sync cluster client reads the slot map when it is built."""


def node_pipeline(cluster: RedisCluster, step: Send) -> list[Any]:
    """``step``'s commands back to back on one connection of its node (through
    the node's plain client, made never to resend)."""
    return pipeline(cluster_node_client(cluster, target(cluster, step)), step.commands)
