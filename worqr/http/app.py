"""The application factory: `create_app`.

Contract for code that adds routes (the web view)::

    app = create_app(client, token=token, show_payloads=False, extra_routes=[Mount("/", ...)])

- The API's routes come first, then ``extra_routes`` in order, so a catch-all
  mount at ``/`` does not shadow ``/v1/...`` or ``/openapi.json``.
- ``app.state.client`` (the `AsyncWorqr`; the caller opens and closes it),
  ``app.state.token`` (None: no token, loopback only) and
  ``app.state.show_payloads`` hold the configuration; ``app.state.config``
  is the whole `HttpConfig`.
- Every request, extra routes' too, first passes `security.Guard`: the body
  limit (413), the Host check when there is no token, and the refusal of a
  cross-site POST/PUT/PATCH/DELETE. A route that changes anything calls
  `worqr.http.auth.require_token(request)` first (a 401 JSON error when the
  ``Authorization: Bearer`` header is missing or wrong); the API's routes all
  do, reads included.
- Errors are JSON ``{"error": {"code", "message"}}`` (`errors`); an `ApiError`
  raised in a mounted Starlette app still gets its status and headers (it is
  an `HTTPException`), and the JSON body too if that app installs
  `errors.EXCEPTION_HANDLERS`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from .._clients.async_client import AsyncWorqr
from . import bulk, groups, history, jobs, limits, queues
from .config import DEFAULT_MAX_BODY_BYTES, EVENTS_INTERVAL, HttpConfig
from .errors import EXCEPTION_HANDLERS
from .openapi import openapi_route
from .operations import Operation, routes
from .paths import EncodedSlashes
from .security import Guard

OPERATIONS: list[Operation] = [
    *jobs.OPERATIONS,
    *bulk.OPERATIONS,
    *queues.OPERATIONS,
    *limits.OPERATIONS,
    *groups.OPERATIONS,
    *history.OPERATIONS,
]
"""Every operation of the API: the routes and the OpenAPI document come from these."""


def create_app(
    client: AsyncWorqr,
    *,
    token: str | None,
    show_payloads: bool,
    extra_routes: Sequence[BaseRoute] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    trusted_hosts: Collection[str] | None = None,
    events_interval: float = EVENTS_INTERVAL,
) -> Starlette:
    """The API (and ``extra_routes``) as an ASGI app over ``client``.

    ``token``: the bearer token every API request must carry (None: none; then
    serve on loopback only). ``show_payloads``: put payloads and results in job
    records and dead-letter lists. ``max_body_bytes``: largest request body.
    ``trusted_hosts``: the only ``Host`` names answered (None: any); `worqr
    http` passes the loopback names when it runs without a token.
    ``events_interval``: seconds between progress reads of an event stream.
    """
    if max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be >= 1, got {max_body_bytes}")
    config = HttpConfig(client, token, show_payloads, max_body_bytes, events_interval)
    served: list[BaseRoute] = [
        openapi_route(OPERATIONS, token=token is not None),
        *routes(OPERATIONS),
        *extra_routes,
    ]
    guard = Middleware(Guard, config=config, trusted_hosts=trusted_hosts)
    slashes = Middleware(EncodedSlashes)  # names holding '/' (sent as %2F) route
    app = Starlette(
        routes=served, middleware=[guard, slashes], exception_handlers=EXCEPTION_HANDLERS
    )
    app.state.config = config
    app.state.client = client
    app.state.token = token
    app.state.show_payloads = show_payloads
    return app
