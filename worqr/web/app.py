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
    constant time) and refuses everything else; with no token, every mutation
    is refused: the view is read-only."""
    expected = None if token is None else token.encode()

    def guard(request: Request) -> None:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if (
            expected is None
            or scheme.lower() != "bearer"
            or not hmac.compare_digest(given.strip().encode(), expected)
        ):
            raise HTTPException(401, "a bearer token is required", {"WWW-Authenticate": "Bearer"})

    return guard


def standalone_app(
    client: AsyncWorqr, *, token: str | None = None, show_payloads: bool = False
) -> Starlette:
    """The web view alone, reading the mesh through ``client`` (used from the
    application's event loop). Mutations need ``token``; without one they are
    all refused. Payloads and results are shown only with ``show_payloads``."""
    app = Starlette(routes=web_routes(guard=bearer_guard(token)))
    app.state.client = client
    app.state.show_payloads = show_payloads
    return app
