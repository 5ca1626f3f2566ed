"""Serve the standalone view with uvicorn on a thread of its own (`worqr demo
--keep`, the browser tests): its own event loop, and its own `AsyncWorqr`
made in that loop, so nothing is shared with the caller's threads."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable

import uvicorn

from .._clients.async_client import AsyncWorqr
from .app import standalone_app


class WebServer:
    """``WebServer(make_client, token=..., show_payloads=...)``: `start` binds
    the socket (port 0: any free one) and returns the view's URL once uvicorn
    serves; `stop` ends it and closes the client. Also a context manager."""

    def __init__(
        self,
        make_client: Callable[[], AsyncWorqr],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        show_payloads: bool = False,
    ) -> None:
        self._make_client = make_client
        self._token, self._show_payloads = token, show_payloads
        # Bound here, so the port is known (and taken) before the thread starts.
        self._socket = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        bound_host, self.port = self._socket.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.url = f"http://{shown}:{self.port}/"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self, timeout: float = 15.0) -> str:
        self._thread = threading.Thread(target=self._run, name="worqr-web", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not (self._server is not None and self._server.started):
            if self._error is not None or not self._thread.is_alive():
                raise RuntimeError(f"the web view did not start: {self._error!r}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the web view did not start within {timeout:g} s")
            time.sleep(0.02)
        return self.url

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # reported by start(); a thread has no caller
            self._error = error

    async def _serve(self) -> None:
        client = self._make_client()
        try:
            app = standalone_app(client, token=self._token, show_payloads=self._show_payloads)
            config = uvicorn.Config(
                app, log_level="warning", access_log=False, lifespan="off", timeout_notify=5
            )
            self._server = uvicorn.Server(config)
            await self._server.serve(sockets=[self._socket])
        finally:
            await client.aclose()

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._socket.close()

    def __enter__(self) -> WebServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
