"""`standalone_app`: the web view on its own, with its own bearer-token check
(the HTTP API's application serves the same routes with its own guard)."""

from __future__ import annotations

import hmac

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request

from .._clients.async_client import AsyncWorqr
from .api import Guard
from .routes import web_routes


def bearer_guard(token: str | None) -> Guard:
    """A guard that accepts ``Authorization: Bearer <token>`` (compared in
    constant time) and refuses everything else, reads and mutations alike;
    with no token it refuses every request it guards (`standalone_app` then
    leaves the reads open and guards only the mutations: a read-only view).
    An empty token is a `ValueError`."""
    if token == "":
        raise ValueError("the token is empty: give one, or None for a read-only view")
    expected = None if token is None else token.encode()

    def guard(request: Request) -> None:
        if expected is None:
            raise _unauthorized("this view is read-only: it runs without a token")
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            raise _unauthorized("this view needs the header 'Authorization: Bearer <token>'")
        if not hmac.compare_digest(given.strip().encode(), expected):
            raise _unauthorized("the bearer token is not this view's")

    return guard


def _unauthorized(message: str) -> HTTPException:
    return HTTPException(401, message, {"WWW-Authenticate": "Bearer"})


def _open(request: Request) -> None:
    """No check: the reads of a view run without a token (read-only)."""


def standalone_app(
    client: AsyncWorqr, *, token: str | None = None, show_payloads: bool = False
) -> Starlette:
    """The web view alone, reading the mesh through ``client`` (used from the
    application's event loop). With ``token``, every read and mutation under
    ``/ui/api/`` needs it (``Authorization: Bearer``); without one the view is
    read-only: reads are open and every mutation is refused. Payloads and
    results are shown only with ``show_payloads``."""
    guard = bearer_guard(token)
    app = Starlette(routes=web_routes(guard=guard, read_guard=_open if token is None else guard))
    app.state.client = client
    app.state.show_payloads = show_payloads
    return app
