"""The asyncio way of each thing the executor (`async_exec`) and the cluster
subscriber (`async_shards`) do differently by colour. `sync_seams` is the
blocking way, with the same names and signatures less ``async``: the generated
`sync_exec` and `shards` import it where these files import this one.

Each seam is one small thing: honouring a cancel that redis-py swallowed, the
timer around a command, waiting for a job's signal, a pipeline on one
connection, reading a cluster's slot map, a pipeline on one cluster node.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.cluster import PipelineCommand, RedisCluster

from .._core.calls import Subscribe
from .._core.pinned import Command, Send, target

T = TypeVar("T")

Client: TypeAlias = aioredis.Redis | RedisCluster
"""A command client the executor runs plans on."""
Cluster = RedisCluster
Waiter = asyncio.Event
"""What a `Listen` request gets: the core's listener sets it (from the loop)."""
Subscriber: TypeAlias = Callable[[Subscribe], Awaitable[None]]
"""Carries out a `Subscribe` request on the client's subscriber connection."""


async def honour_cancel(call: Awaitable[T]) -> T:
    """Await ``call``, and raise CancelledError if this task was cancelled
    meanwhile even when ``call`` swallowed the cancellation.

    redis-py sends each command under ``asyncio.wait_for``, which on Python 3.11
    returns normally when a cancel arrives as the write completes (cpython
    gh-86296). A loop stopped with ``task.cancel()`` (heartbeat, listener, a
    worker's puller) would then run on and its owner would wait forever.
    """
    task = asyncio.current_task()
    before = task.cancelling() if task is not None else 0
    result = await call
    if task is not None and task.cancelling() > before:
        raise asyncio.CancelledError
    return result


def timer(limit: float) -> asyncio.Timeout:
    """One timer around a whole command (``async with``; ``expired()`` says it
    fired), for a client whose connections have no socket timeout of their own
    (`connect.timed_by_worqr`)."""
    return asyncio.timeout(limit)


async def wait_signal(waiter: asyncio.Event, timeout: float) -> None:
    """Wait until ``waiter`` is set or ``timeout`` seconds pass."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(waiter.wait(), timeout)


async def pipeline(client: Any, sent: list[Command]) -> list[Any]:
    """Send commands back to back without MULTI (on a cluster client: each to
    its key's node); the replies, with the errors Redis answered in place."""
    async with client.pipeline(transaction=False) as pipe:
        for args in sent:
            pipe.execute_command(*args)
        return await pipe.execute(raise_on_error=False)  # type: ignore[no-any-return]


async def ready(cluster: RedisCluster) -> None:
    """Read the slot map if the client has not yet (an asyncio cluster client
    reads it on first use; again after redis-py saw a node fail)."""
    await cluster.initialize()


async def node_pipeline(cluster: RedisCluster, step: Send) -> list[Any]:
    """``step``'s commands back to back on one connection of its node, as
    redis-py's own cluster pipeline sends them."""
    sent = [PipelineCommand(i, *args) for i, args in enumerate(step.commands)]
    await target(cluster, step).execute_pipeline(sent)
    return [command.result for command in sent]
