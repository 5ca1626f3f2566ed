"""`web_routes`: the web view as Starlette routes, for any application that
sets ``app.state.client`` (an `AsyncWorqr`) and ``app.state.show_payloads``."""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from .api import Guard, api_routes
from .pages import page_routes
from .recoveries import RecoveryLog


def web_routes(*, guard: Guard) -> list[BaseRoute]:
    """The web view: pages at ``/`` and ``/ui/...``, JSON under ``/ui/api/``,
    its script and style under ``/ui/static/``. ``guard(request)`` runs first in
    every mutation and raises (an `HTTPException` 401) to refuse it."""
    static = StaticFiles(packages=[("worqr.web", "static")])
    return [
        *page_routes(),
        *api_routes(guard, RecoveryLog()),  # one log per set of routes: per application
        Mount("/ui/static", app=static, name="worqr-web-static"),
    ]
