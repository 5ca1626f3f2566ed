"""`web_routes`: the web view as Starlette routes, for any application that
sets ``app.state.client`` (an `AsyncWorqr`) and ``app.state.show_payloads``."""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from .api import Guard, api_routes
from .pages import page_routes
from .recoveries import RecoveryLog


def web_routes(*, guard: Guard, read_guard: Guard | None = None) -> list[BaseRoute]:
    """The web view: pages at ``/`` and ``/ui/...``, JSON under ``/ui/api/``,
    its script and style under ``/ui/static/``.

    Every request under ``/ui/api/`` passes a guard before anything is parsed
    or read: ``guard(request)`` for the mutations (the POSTs: retry, cancel,
    redrive, purge), ``read_guard(request)`` for the reads (the GETs: queue
    names, job ids, errors, worker hosts); ``read_guard`` is ``guard`` when not
    given, so one guard covers both. A guard raises (an `HTTPException` 401)
    to refuse. The pages and static files pass none: they hold no data, and
    the page asks for the token when a read is refused."""
    static = StaticFiles(packages=[("worqr.web", "static")])
    reads = guard if read_guard is None else read_guard
    return [
        *page_routes(),
        *api_routes(reads, guard, RecoveryLog()),  # one log per set of routes: per application
        Mount("/ui/static", app=static, name="worqr-web-static"),
    ]
