"""Names in API paths. A queue name or a job id may hold ``/`` (names are
data), which a client sends percent-encoded (``%2F``); Starlette routes on the
decoded path, where it would split the segment and no route would match.
`EncodedSlashes` routes the API's paths on the raw path instead, each segment
decoded except for ``/`` and ``%``, and `path_name` finishes the decoding."""

from __future__ import annotations

from urllib.parse import unquote

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

API_PREFIX = "/v1/queues/"
ENCODED = "worqr.encoded_path"
"""Scope key: the path's segments still hold ``%2F`` and ``%25`` (`path_name` decodes)."""


def _routable(raw: str) -> str:
    """``raw`` with each segment decoded, except ``/`` and ``%`` kept encoded."""
    return "/".join(
        unquote(part).replace("%", "%25").replace("/", "%2F") for part in raw.split("/")
    )


class EncodedSlashes:
    """ASGI middleware: API requests are routed on their raw path (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_path = scope.get("raw_path") if scope["type"] == "http" else None
        if raw_path:
            raw = raw_path.decode("latin-1")
            path = scope["path"]
            # Only where the server's decoded path is this raw path decoded: a
            # server that rewrote the path (a root path, say) is left alone.
            if path.startswith(API_PREFIX) and unquote(raw) == path and "%" in raw:
                scope = {**scope, "path": _routable(raw), ENCODED: True}
        await self.app(scope, receive, send)


def path_name(request: Request, name: str) -> str:
    """The path parameter ``name``, fully decoded."""
    value: str = request.path_params[name]
    return unquote(value) if request.scope.get(ENCODED) else value
