"""Pub/sub on a Redis Cluster for the sync client: one subscriber connection,
and one reader thread, per node that owns a subscribed channel's slot. Where
each channel goes is decided by `worqr._core.shards.ShardRouter`; this module
only carries out its steps and reads."""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

import redis as redis_py
from redis.client import PubSub

from .._core.base import text
from .._core.shards import UNSUBSCRIBED, CloseIdle, DropNode, Join, Leave, ShardRouter

logger = logging.getLogger("worqr")


def node_overrides(options: dict[str, Any]) -> dict[str, Any]:
    """The subscriber connection settings that replace a cluster node's own."""
    keep = ("socket_timeout", "socket_connect_timeout", "retry", "health_check_interval")
    return {name: options[name] for name in keep if name in options}


class _NodeReader:
    """One node's subscriber connection and the thread reading it."""

    def __init__(self, name: str, client: redis_py.Redis, owner: ClusterSubscriber) -> None:
        self.name = name
        self.client = client
        self.pubsub: PubSub = client.pubsub()  # type: ignore[no-untyped-call]
        self.owner = owner
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"worqr-shard-{name}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        failures = 0
        while not self.stop.is_set():
            try:
                message = self.pubsub.get_message(timeout=0.25)
                failures = 0
            except Exception as error:
                if self.stop.is_set():
                    return
                failures += 1
                self.owner.failed(self.name, error)
                self.stop.wait(min(1.0, 0.05 * 2**failures))
                continue
            if message is not None:
                self.owner.received(self.name, message)

    def close(self) -> None:
        """Stop reading and close the connection (never called from ``thread``,
        nor while holding the subscriber's lock, which the thread may wait for)."""
        self.stop.set()
        self.thread.join(timeout=5)
        try:
            self.pubsub.close()
        finally:
            self.client.close()


class ClusterSubscriber:
    """The subset of redis-py's ``PubSub`` that `Worqr` uses (``subscribe``,
    ``unsubscribe``, ``get_message``, ``close``), over every node that owns a
    subscribed channel. ``cluster`` supplies the slot map and node settings."""

    def __init__(self, cluster: Any, options: dict[str, Any], *, sharded: bool) -> None:
        self._cluster = cluster
        self._overrides = node_overrides(options)
        self._sharded = sharded
        self._router = ShardRouter()
        self._readers: dict[str, _NodeReader] = {}
        self._inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self._lock = threading.RLock()
        self._stale = False  # the slot map may have changed: place channels again
        self._retired: list[_NodeReader] = []  # closed once the lock is released

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

    def get_message(self, timeout: float = 0.0) -> dict[str, Any] | None:
        if self._stale:
            try:
                with self._lock:
                    self._stale = False
                    try:
                        self._place(refresh=True)
                    except Exception:
                        self._stale = True
                        raise
            finally:
                self._close_retired()
        try:
            return self._inbox.get(timeout=timeout) if timeout > 0 else self._inbox.get_nowait()
        except queue.Empty:
            return None

    def close(self) -> None:
        with self._lock:
            self._retired += self._readers.values()
            self._readers = {}
        self._close_retired()

    def _close_retired(self) -> None:
        with self._lock:
            retired, self._retired = self._retired, []
        for reader in retired:
            reader.close()

    # -- called by the node readers --------------------------------------------

    def received(self, node: str, message: dict[str, Any]) -> None:
        if message.get("type") in UNSUBSCRIBED:
            channel = text(message.get("channel") or b"")
            with self._lock:
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
        with self._lock:
            # Subscribe the node's channels again wherever the fresh map says.
            self._router.forget_node(node)
            self._stale = True
        logger.info("pub/sub on node %s: %s; subscribing again", node, error)

    # -- placing channels --------------------------------------------------------

    def _owner(self, channel: str) -> str:
        return str(self._cluster.get_node_from_key(channel).name)

    def _place(self, *, refresh: bool) -> None:
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

    def _leave(self, reader: _NodeReader, names: list[str]) -> None:
        try:
            if self._sharded:
                reader.pubsub.sunsubscribe(*names)  # type: ignore[no-untyped-call]
            else:
                reader.pubsub.unsubscribe(*names)  # type: ignore[no-untyped-call]
        except Exception as error:  # the node is gone: its connection goes with it
            logger.debug("pub/sub: unsubscribing on node %s failed: %s", reader.name, error)
            self._drop_reader(reader.name)

    def _reader(self, node: str) -> _NodeReader:
        reader = self._readers.get(node)
        if reader is None:
            found = self._cluster.get_node(node_name=node)
            pool = self._cluster.get_redis_connection(found).connection_pool
            kwargs = {**pool.connection_kwargs, **self._overrides}
            connections = redis_py.ConnectionPool(connection_class=pool.connection_class, **kwargs)
            client = redis_py.Redis(connection_pool=connections)
            reader = self._readers[node] = _NodeReader(node, client, self)
        return reader

    def _drop_reader(self, node: str) -> None:
        self._router.forget_node(node)
        self._retire(node)

    def _retire(self, node: str) -> None:
        """Close ``node``'s reader once the lock is released."""
        reader = self._readers.pop(node, None)
        if reader is not None:
            self._retired.append(reader)
