"""A TCP fault proxy for the fault suite: forwards loopback connections to a
target port, and can hold all traffic as a network partition would.

While partitioned, bytes are neither delivered nor dropped: like TCP segments
retransmitted across a partition, they arrive once it heals (unless a side
gave up and closed its connection meanwhile). New connections are accepted
(the kernel completes the handshake) but reach the target only after healing.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading


class FaultProxy:
    def __init__(self, target_port: int, host: str = "127.0.0.1") -> None:
        self.target = (host, target_port)
        self.listener = socket.create_server((host, 0))
        self.port: int = self.listener.getsockname()[1]
        self.open = threading.Event()
        self.open.set()
        self.closing = threading.Event()
        self.sockets: set[socket.socket] = set()
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"redis://{self.target[0]}:{self.port}/0"

    def start(self) -> FaultProxy:
        self._spawn(self._accept)
        return self

    def partition(self) -> None:
        self.open.clear()

    def heal(self) -> None:
        self.open.set()

    def close(self) -> None:
        self.closing.set()
        self.open.set()
        with contextlib.suppress(OSError):
            self.listener.close()
        with self.lock:
            sockets = list(self.sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()
        for thread in self.threads:
            thread.join(5)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        with self.lock:
            self.threads.append(thread)
        thread.start()

    def _track(self, sock: socket.socket) -> None:
        with self.lock:
            self.sockets.add(sock)

    def _wait_open(self) -> bool:
        while not self.open.wait(0.05):
            if self.closing.is_set():
                return False
        return not self.closing.is_set()

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                readable, _, _ = select.select([self.listener], [], [], 0.05)
                if not readable:
                    continue
                client, _ = self.listener.accept()
            except (OSError, ValueError):
                return
            self._track(client)
            self._spawn(self._connect, client)

    def _connect(self, client: socket.socket) -> None:
        if not self._wait_open():
            client.close()
            return
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        self._track(upstream)
        self._spawn(self._pump, client, upstream)
        self._pump(upstream, client)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while not self.closing.is_set():
                readable, _, _ = select.select([source], [], [], 0.05)
                if not readable:
                    continue
                data = source.recv(65536)
                if not data:
                    break
                if not self._wait_open():  # held while partitioned
                    break
                sink.sendall(data)
        except (OSError, ValueError):  # ValueError: select() on a socket closed meanwhile
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
