# Generated from async_shards.py by tools/unasync.py: do not edit; edit async_shards.py
# and run `python tools/unasync.py` (make lint fails while this copy is stale).
"""Pub/sub on a Redis Cluster: one subscriber connection, and one reader, per
node that owns a subscribed channel's slot. Where each channel goes is decided
by `worqr._core.shards.ShardRouter`; this module carries out its steps.

Written once, in ``async_shards.py`` (asyncio, for `AsyncWorqr`);
``tools/unasync.py`` writes ``shards.py`` from it (for `Worqr`). What differs by
colour (a node is read by a task or by a thread, the queue the messages wait
in, the locks) is in ``async_readers.py`` and ``sync_readers.py``.
"""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import SlotNotCoveredError

from .._core.shards import UNSUBSCRIBED, CloseIdle, DropNode, Join, Leave, ShardRouter
from .._core.state import text
from .sync_readers import Inbox, Message, NodeReader, locks, node_client
from .sync_seams import ready

logger = logging.getLogger("worqr")


def node_overrides(options: dict[str, Any]) -> dict[str, Any]:
    """The subscriber connection settings that replace a cluster node's own."""
    keep = ("socket_timeout", "socket_connect_timeout", "retry", "health_check_interval")
    return {name: options[name] for name in keep if name in options}


class ClusterSubscriber:
    """The subset of redis-py's ``PubSub`` that the client uses (``subscribe``,
    ``unsubscribe``, ``get_message``, closing, ``subscribed``) over every node
    that owns a subscribed channel. ``cluster`` supplies the slot map and node
    settings."""

    def __init__(self, cluster: Any, options: dict[str, Any], *, sharded: bool) -> None:
        self._cluster = cluster
        self._overrides = node_overrides(options)
        self._sharded = sharded
        self._router = ShardRouter()
        self._readers: dict[str, NodeReader] = {}
        self._inbox = Inbox()
        # One subscription change at a time (_lock); _state guards what the
        # readers report (the same lock for threads; nothing on the loop).
        self._lock, self._state = locks()
        self._stale = False  # the slot map may have changed: place channels again
        self._retired: list[NodeReader] = []  # closed once the lock is released

    @property
    def subscribed(self) -> bool:
        return bool(self._router.wanted)

    # -- called by the client ----------------------------------------------------

    def subscribe(self, *channels: str) -> None:
        try:
            with self._lock:
                self._router.want(channels)
                self._place(refresh=False)
        finally:
            self._close_retired()

    def unsubscribe(self, *channels: str) -> None:
        try:
            with self._lock:
                for node, names in self._router.unwant(channels).items():
                    reader = self._readers.get(node)
                    if reader is not None:
                        self._leave(reader, names)
                for step in self._router.idle(self._readers.keys()):
                    self._retire(step.node)
        finally:
            self._close_retired()

    def get_message(self, timeout: float = 0.0) -> Message | None:
        if self._stale:
            try:
                with self._lock:
                    self._stale = False
                    try:
                        self._place(refresh=True)
                    except BaseException:  # in asyncio a cancel too (a change cuts reads short)
                        self._stale = True
                        raise
            finally:
                self._close_retired()
        return self._inbox.get(timeout)

    def close(self) -> None:
        with self._state:
            self._retired += self._readers.values()
            self._readers = {}
        self._close_retired()

    def _close_retired(self) -> None:
        with self._state:
            retired, self._retired = self._retired, []
        for reader in retired:
            reader.close()

    # -- called by the node readers --------------------------------------------

    def received(self, node: str, message: Message) -> None:
        if message.get("type") in UNSUBSCRIBED:
            channel = text(message.get("channel") or b"")
            with self._state:
                if self._router.dropped(node, channel):
                    logger.info("pub/sub: the slot of a channel moved; subscribing again")
                    self._stale = True
            return
        self._inbox.put(message)

    def failed(self, node: str, error: BaseException) -> None:
        # A refused subscription (MOVED) or a lost node: place the channels again
        # from a fresh slot map. Connection trouble also reaches the listener loop,
        # which logs the outage once and backs off.
        # The error itself is not queued for the listener: placing the channels
        # again (on its next wait) fails in turn if the cluster is really out of
        # reach, and that failure is the outage the listener reports. Queued
        # errors would outlive the outage and stall the listener after it.
        with self._state:
            # Subscribe the node's channels again wherever the fresh map says.
            self._router.forget_node(node)
            self._stale = True
        logger.info("pub/sub on node %s: %s; subscribing again", node, error)

    # -- placing channels --------------------------------------------------------

    def _owner(self, channel: str) -> str:
        node = self._cluster.get_node_from_key(channel)
        if node is None:
            raise SlotNotCoveredError(f"no node serves the slot of a channel ({channel!r})")
        return str(node.name)

    def _place(self, *, refresh: bool) -> None:
        ready(self._cluster)  # a client passed in may not have read the slot map
        known = None
        if refresh:  # channels the server may have dropped silently are placed again
            self._cluster.nodes_manager.initialize()
            known = {node.name for node in self._cluster.get_nodes()}
        for step in self._router.placement(self._readers.keys(), self._owner, known):
            if isinstance(step, DropNode | CloseIdle):
                self._retire(step.node)
            elif isinstance(step, Leave):
                reader = self._readers.get(step.node)
                if reader is not None:
                    self._leave(reader, step.channels)
            else:
                self._join(step)

    def _join(self, step: Join) -> None:
        reader = self._reader(step.node)
        if self._sharded:
            reader.pubsub.ssubscribe(*step.channels)
        else:
            reader.pubsub.subscribe(*step.channels)
        self._router.place(step.node, step.channels)

    def _leave(self, reader: NodeReader, names: list[str]) -> None:
        try:
            if self._sharded:
                reader.pubsub.sunsubscribe(*names)
            else:
                reader.pubsub.unsubscribe(*names)
        except Exception as error:  # the node is gone: its connection goes with it
            logger.debug("pub/sub: unsubscribing on node %s failed: %s", reader.name, error)
            self._router.forget_node(reader.name)
            self._retire(reader.name)

    def _reader(self, node: str) -> NodeReader:
        reader = self._readers.get(node)
        if reader is None:
            found = self._cluster.get_node(node_name=node)
            if found is None:
                raise RedisConnectionError(f"cluster node {node} is not in the slot map")
            client = node_client(self._cluster, found, self._overrides)
            reader = NodeReader(node, client, self.received, self.failed)
            self._readers[node] = reader
        return reader

    def _retire(self, node: str) -> None:
        """Close ``node``'s reader once the lock is released."""
        reader = self._readers.pop(node, None)
        if reader is not None:
            self._retired.append(reader)
