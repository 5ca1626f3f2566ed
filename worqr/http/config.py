"""The server's settings, shared by every route through the request's scope."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from .._clients.async_client import AsyncWorqr

CONFIG_SCOPE_KEY = "worqr.http"
"""The ASGI scope key under which `security.Guard` puts the `HttpConfig` for
every request (so routes of a mounted sub-application find it too, where
``request.app`` is the sub-application)."""

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
"""Largest request body accepted (413 above it): a payload is at most about this."""

MAX_WAIT_SECONDS = 60.0
"""Longest ``?wait=`` of the result endpoint (a longer wait: ask again)."""

EVENTS_INTERVAL = 0.5
"""Seconds between reads of a job's progress while its event stream is open
(its end is pushed at once: the stream waits on the job's end notification)."""


@dataclass(frozen=True)
class HttpConfig:
    client: AsyncWorqr
    token: str | None
    show_payloads: bool
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    events_interval: float = EVENTS_INTERVAL


def config_of(request: Request) -> HttpConfig:
    """The config of the app that received ``request`` (`security.Guard` puts it
    in the scope, so this works in a mounted sub-application too)."""
    config = request.scope.get(CONFIG_SCOPE_KEY)
    if not isinstance(config, HttpConfig):
        raise RuntimeError("this request did not pass through worqr.http's create_app")
    return config


def client_of(request: Request) -> AsyncWorqr:
    return config_of(request).client
