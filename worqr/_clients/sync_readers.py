"""What the sync cluster subscriber (`shards`) does its own way: each node's
subscriber connection is read by a thread, messages wait in a thread-safe
queue, and one re-entrant lock guards both the subscription changes and the
state the reader threads report to. The same names as `async_readers`."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import redis as redis_py

Message = dict[str, Any]


def locks() -> tuple[Any, Any]:
    """The lock a subscription change holds, and what guards the state the
    reader threads report to: the same re-entrant lock."""
    lock = threading.RLock()
    return lock, lock


def node_client(cluster: Any, node: Any, overrides: dict[str, Any]) -> redis_py.Redis:
    """A client of its own for one cluster node's subscriber connection."""
    pool = cluster.get_redis_connection(node).connection_pool
    kwargs = {**pool.connection_kwargs, **overrides}
    connections = redis_py.ConnectionPool(connection_class=pool.connection_class, **kwargs)
    return redis_py.Redis(connection_pool=connections)


class Inbox:
    """The messages the node readers received, for the listener."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Message] = queue.Queue()

    def put(self, message: Message) -> None:
        self._queue.put(message)

    def get(self, timeout: float) -> Message | None:
        """The next message, or None after ``timeout`` seconds (0: only one waiting)."""
        try:
            return self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return None


class NodeReader:
    """One node's subscriber connection and the thread reading it; what it reads
    goes to ``received(node, message)``, a failure to ``failed(node, error)``."""

    def __init__(
        self,
        name: str,
        client: redis_py.Redis,
        received: Callable[[str, Message], None],
        failed: Callable[[str, BaseException], None],
    ) -> None:
        self.name = name
        self.client = client
        self.pubsub: Any = client.pubsub()  # type: ignore[no-untyped-call]
        self._received = received
        self._failed = failed
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
                self._failed(self.name, error)
                self.stop.wait(min(1.0, 0.05 * 2**failures))
                continue
            if message is not None:
                self._received(self.name, message)

    def close(self) -> None:
        """Stop reading and close the connection (never called from ``thread``,
        nor while holding the subscriber's lock, which the thread may wait for)."""
        self.stop.set()
        self.thread.join(timeout=5)
        try:
            self.pubsub.close()
        finally:
            self.client.close()
