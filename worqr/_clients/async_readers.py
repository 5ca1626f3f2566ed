"""What the asyncio cluster subscriber (`async_shards`) does its own way: each
node's subscriber connection is read by a task, messages wait in an asyncio
queue, and one lock orders subscription changes (the readers, on the loop, need
none). `sync_readers` is the threads' way, under the same names."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis

Message = dict[str, Any]


def locks() -> tuple[asyncio.Lock, contextlib.nullcontext[None]]:
    """The lock a subscription change holds, and what guards the state the
    readers report to: nothing, since they run on the loop between awaits."""
    return asyncio.Lock(), contextlib.nullcontext()


def node_client(cluster: Any, node: Any, overrides: dict[str, Any]) -> aioredis.Redis:
    """A client of its own for one cluster node's subscriber connection."""
    kwargs = {**node.connection_kwargs, **overrides}
    pool = aioredis.ConnectionPool(connection_class=node.connection_class, **kwargs)
    return aioredis.Redis(connection_pool=pool)


class Inbox:
    """The messages the node readers received, for the listener."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Message] = asyncio.Queue()

    def put(self, message: Message) -> None:
        self._queue.put_nowait(message)

    async def get(self, timeout: float) -> Message | None:
        """The next message, or None after ``timeout`` seconds (0: only one waiting)."""
        try:
            if timeout <= 0:
                return self._queue.get_nowait()
            return await asyncio.wait_for(self._queue.get(), timeout)
        except (TimeoutError, asyncio.QueueEmpty):
            return None


class NodeReader:
    """One node's subscriber connection and the task reading it; what it reads
    goes to ``received(node, message)``, a failure to ``failed(node, error)``."""

    def __init__(
        self,
        name: str,
        client: aioredis.Redis,
        received: Callable[[str, Message], None],
        failed: Callable[[str, BaseException], None],
    ) -> None:
        self.name = name
        self.client = client
        self.pubsub: Any = client.pubsub()
        self._received = received
        self._failed = failed
        self.task = asyncio.create_task(self._run(), name=f"worqr-shard-{name}")

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                if self.pubsub.subscribed:
                    message = await self.pubsub.get_message(timeout=0.25)
                else:
                    message = None
                    await asyncio.sleep(0.05)
                failures = 0
            except Exception as error:
                failures += 1
                self._failed(self.name, error)
                await asyncio.sleep(min(1.0, 0.05 * 2**failures))
                continue
            if message is not None:
                self._received(self.name, message)

    async def close(self) -> None:
        """Stop reading and close the connection."""
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        try:
            await self.pubsub.aclose()
        finally:
            await self.client.aclose()
