"""The health probes' HTTP server: ``/livez`` and ``/readyz``, plain text.

A `ProbeServer` answers from a thread of its own (the standard library's
``http.server``, so a worker needs no web framework), calling the checks it
was given: each returns None (200, ``ok``) or one line saying what is wrong
(503, that line). GET and HEAD; any other path is a 404. The checks only read
state, so a probe is answered while the event loop is blocked or Redis is
away, which is when it matters.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

logger = logging.getLogger("worqr.probes")

PATHS = ("/livez", "/readyz")


class Checks(Protocol):
    """What the probes ask: None when all is well, else one line why not."""

    def live(self) -> str | None: ...

    def ready(self) -> str | None: ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    routes: Mapping[str, Callable[[], str | None]]


class _V6Server(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        check = self.server.routes.get(self.path.partition("?")[0])
        if check is None:
            code, text = 404, f"not found: the probes are {' and '.join(PATHS)}"
        else:
            code, text = _run(check)
        data = (" ".join(text.split()) + "\n").encode()  # one line, whatever the check said
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass  # an orchestrator probes every few seconds: not worth a log line each


def _run(check: Callable[[], str | None]) -> tuple[int, str]:
    try:
        reason = check()
    except Exception as error:  # a bug in a check: said, not hidden behind a 503
        logger.exception("a health check failed")
        return 500, f"the check failed: {type(error).__name__}: {error}"
    return (200, "ok") if reason is None else (503, reason)


class ProbeServer:
    """Serves ``checks`` on ``host:port`` until `close()`; `port` is the bound
    port (useful with port 0). Binding a busy port raises `OSError` here."""

    def __init__(self, checks: Checks, port: int, host: str = "127.0.0.1") -> None:
        kind = _V6Server if ":" in host else _Server
        self._server = kind((host, port), _Handler)
        self._server.routes = {"/livez": checks.live, "/readyz": checks.ready}
        self.host = host
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.25,), name="worqr-probes", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        """Stop serving and close the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
