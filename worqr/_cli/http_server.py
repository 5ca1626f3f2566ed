"""`worqr http`: the HTTP API (`worqr.http`) served by uvicorn.

The checks that can refuse to start (the extra installed, the token, a
non-loopback address without one, the port free) run before anything serves;
SIGINT and SIGTERM stop it (uvicorn's handlers), closing open streams after 5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import sys
from types import FrameType
from typing import Any

from .._clients.async_client import AsyncWorqr
from .._clients.connect import resolve_url
from .._settings import Settings
from .base import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError

INSTALL = "pip install 'worqr[http]'"


def _listen(host: str, port: int) -> socket.socket:
    """Bind before serving: a taken port is a one-line error, and port 0 is known."""
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # IPPROTO_TCP explicitly (socket.create_server leaves it 0): asyncio sets
    # TCP_NODELAY only on connections of a socket that says TCP, and without it
    # every keep-alive response after the first waited ~40 ms (Nagle against
    # the client's delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(socket.SOMAXCONN)
        return sock
    except OSError as error:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None


class _Terminate:
    """SIGTERM before and after uvicorn's own handler: uvicorn catches SIGTERM
    while it serves, shuts down gracefully, then raises it again so the
    process would die of it; here it lands on this handler instead, and the
    command exits 0 after a clean stop, as `worqr worker` does. One that
    arrives before serving starts stops the server at once."""

    def __init__(self) -> None:
        self.requested = False
        self.server: Any = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        if self.server is not None:
            self.server.should_exit = True


def run_http(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: F401  (the extra's other half; _serve uses it)

        from ..http.auth import is_loopback, read_token_file
        from ..http.security import LOOPBACK_HOSTS
    except ImportError as error:
        raise CliError(
            f"worqr http needs Starlette and uvicorn ({error.name} is missing): {INSTALL}"
        ) from None
    token = None
    if args.token_file is not None:
        try:
            token = read_token_file(args.token_file)
        except (OSError, ValueError) as error:
            message = getattr(error, "strerror", None) or str(error)
            raise CliError(f"--token-file: {message}", EXIT_USAGE) from None
    elif not is_loopback(args.host):
        raise CliError(
            f"--host {args.host} is not a loopback address: anyone who can reach it could "
            "submit and cancel jobs; give --token-file FILE (a bearer token every request "
            "must send), or listen on 127.0.0.1",
            EXIT_USAGE,
        )
    sock = _listen(args.host, args.port)
    terminate = _Terminate()
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        trusted = None if token else LOOPBACK_HOSTS
        return asyncio.run(_serve(args, token, sock, trusted, terminate))
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()


async def _serve(
    args: argparse.Namespace,
    token: str | None,
    sock: socket.socket,
    trusted_hosts: tuple[str, ...] | None,
    terminate: _Terminate,
) -> int:
    import uvicorn

    from ..http.app import create_app
    from ..http.auth import require_token
    from ..web import web_routes

    settings = Settings(
        retry_deadline=args.retry_deadline, socket_timeout=max(args.retry_deadline, 5.0)
    )
    try:
        client = AsyncWorqr(
            resolve_url(args.url), prefix=args.prefix, settings=settings, cluster=args.cluster
        )
    except ValueError as error:  # redis-py rejects malformed URLs with ValueError
        raise CliError(f"bad Redis URL: {error}", EXIT_USAGE) from None
    async with client:
        app = create_app(
            client,
            token=token,
            show_payloads=args.show_payloads,
            max_body_bytes=args.max_body_bytes,
            trusted_hosts=trusted_hosts,
            extra_routes=web_routes(guard=require_token),  # the web view at /
        )
        config = uvicorn.Config(
            app,
            log_level=str(args.log_level).lower(),
            access_log=not args.no_access_log,
            lifespan="off",
            server_header=False,
            timeout_graceful_shutdown=5,
        )
        server = uvicorn.Server(config)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        guard = "bearer token required" if token else "no token: loopback only"
        print(f"worqr http: serving on http://{shown}:{port} ({guard})", flush=True)
        print(f"OpenAPI: http://{shown}:{port}/openapi.json", file=sys.stderr, flush=True)
        terminate.server = server
        if not terminate.requested:
            await server.serve(sockets=[sock])
    return EXIT_OK if server.started or terminate.requested else EXIT_FAILURE
