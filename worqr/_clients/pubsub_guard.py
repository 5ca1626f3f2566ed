"""One user at a time for a client's pub/sub connection.

redis-py's `PubSub` is not safe to share: a subscribe from one thread (or task)
while the listener reads or reconnects the same socket can take the other's
reply, and both then wait for ever (a subscriber socket has no read timeout).
A guard serialises every use of the `PubSub` object: the listener's reads and
the subscription changes plans make, from any thread or task. Callbacks run
outside it, so a slow callback never delays a subscription change.

The sync listener never blocks while holding the guard: it reads only what has
arrived, then waits on the socket (and a wake-up pair) outside it. The asyncio
listener cannot wait on the socket without reading, so it reads under a
deadline that a change moves to now (`AsyncPubSubGuard.read`, `apply`): the
read ends as at its own timeout (redis-py's parsers keep what a cut read had
received), the change goes first, and an idle listener wakes about once a
second instead of every 50 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
import threading
from collections.abc import AsyncIterator
from typing import Any

from .._core.calls import Subscribe

CUT_MARGIN = 0.5  # s past a read's own timeout before the guard's deadline


class PubSubGuard:
    """The sync client's guard: a lock, and a way to wake the listener's wait."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._wake_in: socket.socket | None = None
        self._wake_out: socket.socket | None = None

    def start(self) -> None:
        """Before the listener starts: the pair that wakes its waits."""
        if self._wake_in is None:
            self._wake_in, self._wake_out = socket.socketpair()
            self._wake_in.setblocking(False)
            self._wake_out.setblocking(False)

    def apply(self, pubsub: Any, request: Subscribe) -> None:
        """Change the subscriptions (from any thread, the listener's callbacks too)."""
        with self.lock:
            if request.add:
                pubsub.subscribe(*request.add)
            if request.remove:
                pubsub.unsubscribe(*request.remove)
        self.wake()  # a reconnect may have replaced the socket the listener waits on

    def next_message(self, pubsub: Any, timeout: float) -> dict[str, Any] | None:
        """In the listener: the next message, or None after waiting up to
        ``timeout`` seconds for one (cut short by `wake`)."""
        with self.lock:
            message: dict[str, Any] | None = pubsub.get_message(timeout=0)
            if message is not None:
                return message
            connection = pubsub.connection
            sock = getattr(connection, "_sock", None) if pubsub.subscribed else None
            if isinstance(sock, ssl.SSLSocket) and sock.pending():
                return None  # decrypted bytes wait inside TLS, invisible to select
        # Nothing buffered: wait for data or a wake-up without holding the lock.
        self.sleep(timeout, sock)
        return None

    def sleep(self, timeout: float, sock: socket.socket | None = None) -> None:
        """Wait ``timeout`` seconds, until ``sock`` is readable, or until woken."""
        wake = self._wake_in
        assert wake is not None, "start() first"
        watched: list[Any] = [wake] if sock is None else [wake, sock]
        try:
            ready, _, _ = select.select(watched, [], [], timeout)
        except (OSError, ValueError):  # the socket was closed meanwhile: read again
            return
        if wake in ready:
            with contextlib.suppress(OSError):
                while wake.recv(4096):
                    pass

    def wake(self) -> None:
        if self._wake_out is not None:  # else no listener runs
            with contextlib.suppress(OSError):  # a full buffer wakes it just as well
                self._wake_out.send(b"\0")

    def close(self, pubsub: Any | None) -> None:
        if pubsub is not None:
            with self.lock:
                pubsub.close()
        for end in (self._wake_in, self._wake_out):
            if end is not None:
                end.close()


class AsyncPubSubGuard:
    """The asyncio client's guard: a lock the listener holds one read at a time,
    a read that a subscription change cuts short."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._read: asyncio.Timeout | None = None

    async def read(self, pubsub: Any, wait: float) -> Any:
        """The listener's next message within ``wait`` seconds (None: none came),
        or None sooner when a subscription change cuts the read short (`apply`).
        The caller holds the lock."""
        try:
            # redis-py's own timeout ends an idle read; the guard's deadline, a cut one.
            async with self._reading(wait + CUT_MARGIN):
                return await pubsub.get_message(timeout=wait)
        except TimeoutError:
            return None

    @contextlib.asynccontextmanager
    async def _reading(self, seconds: float) -> AsyncIterator[None]:
        async with asyncio.timeout(seconds) as read:
            self._read = read
            try:
                yield
            finally:
                self._read = None

    async def apply(self, pubsub: Any, request: Subscribe) -> None:
        read = self._read
        if read is not None and not read.expired():
            read.reschedule(asyncio.get_running_loop().time())  # the listener lets go now
        async with self.lock:
            if request.add:
                await pubsub.subscribe(*request.add)
            if request.remove:
                await pubsub.unsubscribe(*request.remove)
        self._changed.set()

    async def sleep(self, timeout: float) -> None:
        """Wait ``timeout`` seconds, or until the subscriptions change."""
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)
