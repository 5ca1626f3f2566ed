"""Pub/sub on a Redis Cluster for the asyncio client: one subscriber connection,
and one reader task, per node that owns a subscribed channel's slot. Where each
channel goes is decided by `worqr._core.shards.ShardRouter` (as for the sync
subscriber in `shards`); only the waiting differs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import SlotNotCoveredError

from .._core.base import text
from .._core.shards import UNSUBSCRIBED, CloseIdle, DropNode, Join, Leave, ShardRouter
from .shards import node_overrides

logger = logging.getLogger("worqr")


class _NodeReader:
    """One node's subscriber connection and the task reading it."""

    def __init__(self, name: str, client: aioredis.Redis, owner: AsyncClusterSubscriber) -> None:
        self.name = name
        self.client = client
        self.pubsub: PubSub = client.pubsub()
        self.owner = owner
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
                self.owner.failed(self.name, error)
                await asyncio.sleep(min(1.0, 0.05 * 2**failures))
                continue
            if message is not None:
                self.owner.received(self.name, message)

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        try:
            await self.pubsub.aclose()  # type: ignore[no-untyped-call]
        finally:
            await self.client.aclose()


class AsyncClusterSubscriber:
    """The subset of redis-py's asyncio ``PubSub`` that `AsyncWorqr` uses
    (``subscribe``, ``unsubscribe``, ``get_message``, ``aclose``, ``subscribed``)
    over every node that owns a subscribed channel."""

    def __init__(self, cluster: Any, options: dict[str, Any], *, sharded: bool) -> None:
        self._cluster = cluster
        self._overrides = node_overrides(options)
        self._sharded = sharded
        self._router = ShardRouter()
        self._readers: dict[str, _NodeReader] = {}
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._stale = False  # the slot map may have changed: place channels again

    @property
    def subscribed(self) -> bool:
        return bool(self._router.wanted)

    # -- called by the client ----------------------------------------------------

    async def subscribe(self, *channels: str) -> None:
        async with self._lock:
            self._router.want(channels)
            await self._place(refresh=False)

    async def unsubscribe(self, *channels: str) -> None:
        async with self._lock:
            for node, names in self._router.unwant(channels).items():
                reader = self._readers.get(node)
                if reader is not None:
                    await self._leave(reader, names)
            for step in self._router.idle(self._readers.keys()):
                await self._retire(step.node)

    async def get_message(self, timeout: float = 0.0) -> dict[str, Any] | None:
        if self._stale:
            async with self._lock:
                self._stale = False
                try:
                    await self._place(refresh=True)
                except BaseException:  # a cancel too (a subscription change cuts reads)
                    self._stale = True
                    raise
        try:
            if timeout <= 0:
                return self._inbox.get_nowait()
            return await asyncio.wait_for(self._inbox.get(), timeout)
        except (TimeoutError, asyncio.QueueEmpty):
            return None

    async def aclose(self) -> None:
        readers, self._readers = list(self._readers.values()), {}
        for reader in readers:
            await reader.close()

    # -- called by the node readers --------------------------------------------

    def received(self, node: str, message: dict[str, Any]) -> None:
        if message.get("type") in UNSUBSCRIBED:
            channel = text(message.get("channel") or b"")
            if self._router.dropped(node, channel):
                logger.info("pub/sub: the slot of a channel moved; subscribing again")
                self._stale = True
            return
        self._inbox.put_nowait(message)

    def failed(self, node: str, error: BaseException) -> None:
        # A refused subscription (MOVED) or a lost node: place the node's channels
        # again from a fresh slot map (see `_shards.ClusterSubscriber.failed`).
        # Not queued for the listener: see `_shards.ClusterSubscriber.failed`.
        self._router.forget_node(node)
        self._stale = True
        logger.info("pub/sub on node %s: %s; subscribing again", node, error)

    # -- placing channels --------------------------------------------------------

    def _owner(self, channel: str) -> str:
        node = self._cluster.get_node_from_key(channel)
        if node is None:
            raise SlotNotCoveredError(f"no node serves the slot of a channel ({channel!r})")
        return str(node.name)

    async def _place(self, *, refresh: bool) -> None:
        await self._cluster.initialize()  # a client passed in may not have read the slot map
        known = None
        if refresh:  # channels the server may have dropped silently are placed again
            await self._cluster.nodes_manager.initialize()
            known = {node.name for node in self._cluster.get_nodes()}
        for step in self._router.placement(self._readers.keys(), self._owner, known):
            if isinstance(step, DropNode | CloseIdle):
                await self._retire(step.node)
            elif isinstance(step, Leave):
                reader = self._readers.get(step.node)
                if reader is not None:
                    await self._leave(reader, step.channels)
            else:
                await self._join(step)

    async def _join(self, step: Join) -> None:
        reader = self._reader(step.node)
        if self._sharded:
            await reader.pubsub.ssubscribe(*step.channels)
        else:
            await reader.pubsub.subscribe(*step.channels)
        self._router.place(step.node, step.channels)

    async def _leave(self, reader: _NodeReader, names: list[str]) -> None:
        try:
            if self._sharded:
                await reader.pubsub.sunsubscribe(*names)
            else:
                await reader.pubsub.unsubscribe(*names)
        except Exception as error:  # the node is gone: its connection goes with it
            logger.debug("pub/sub: unsubscribing on node %s failed: %s", reader.name, error)
            await self._drop_reader(reader.name)

    def _reader(self, node: str) -> _NodeReader:
        reader = self._readers.get(node)
        if reader is None:
            found = self._cluster.get_node(node_name=node)
            if found is None:
                raise RedisConnectionError(f"cluster node {node} is not in the slot map")
            kwargs = {**found.connection_kwargs, **self._overrides}
            pool = aioredis.ConnectionPool(connection_class=found.connection_class, **kwargs)
            client = aioredis.Redis(connection_pool=pool)
            reader = self._readers[node] = _NodeReader(node, client, self)
        return reader

    async def _drop_reader(self, node: str) -> None:
        self._router.forget_node(node)
        await self._retire(node)

    async def _retire(self, node: str) -> None:
        reader = self._readers.pop(node, None)
        if reader is not None:
            await reader.close()
