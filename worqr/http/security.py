"""The guard every request passes before any route (the API's and the web
view's): the body size limit, the Host check, and no mutation from another
site's page.

- **Body limit.** A declared ``Content-Length`` over the limit is answered 413
  at once; a body streamed without one is counted as it is read and refused
  413 the moment it passes the limit, before a route sees it whole.
- **Host.** When the server has no token it listens on loopback only; a page
  of another site can still reach it through DNS rebinding (its own name
  resolving to 127.0.0.1), so the ``Host`` header must then be a loopback name.
- **Cross-site mutations.** Browsers send ``Origin`` (and ``Sec-Fetch-Site``)
  with a cross-site POST, PUT, PATCH or DELETE: those are refused, so a page
  of another site cannot submit, cancel or purge through a browser on this
  machine even without a token (a form POST needs no CORS preflight).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .config import CONFIG_SCOPE_KEY, HttpConfig
from .errors import ApiError, error_response

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def _host_name(host: str) -> str:
    """``Host`` header without its port: ``[::1]:8080`` -> ``::1``."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def too_large(limit: int) -> ApiError:
    return ApiError(
        413, "body_too_large", f"the request body is over this server's limit of {limit:,} bytes"
    )


class Guard:
    """Pure ASGI middleware (it wraps ``receive`` to count the body)."""

    def __init__(
        self, app: ASGIApp, *, config: HttpConfig, trusted_hosts: Collection[str] | None
    ) -> None:
        self.app = app
        self.config = config
        self.trusted_hosts = (
            None if trusted_hosts is None else {_host_name(h) for h in trusted_hosts}
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope[CONFIG_SCOPE_KEY] = self.config
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refused = self._refusal(scope["method"], headers)
        if refused is not None:
            await refused(scope, receive, send)
            return
        limit = self.config.max_body_bytes
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise too_large(limit)  # rendered as JSON by the app's handlers
            return message

        await self.app(scope, counted, send)

    def _refusal(self, method: str, headers: dict[str, str]) -> Any:
        host = headers.get("host", "")
        if self.trusted_hosts is not None and _host_name(host) not in self.trusted_hosts:
            return error_response(
                403,
                "untrusted_host",
                f"Host {host!r} is not a loopback name; without a token this server "
                "answers only to 127.0.0.1, localhost and [::1]",
            )
        if method not in SAFE_METHODS:
            origin = headers.get("origin")
            cross = headers.get("sec-fetch-site") in ("cross-site", "same-site")
            if cross or (origin is not None and urlsplit(origin).netloc != host):
                return error_response(
                    403,
                    "cross_origin",
                    f"a {method} from another site's page ({origin or 'cross-site'}) is refused",
                )
        declared = headers.get("content-length")
        limit = self.config.max_body_bytes
        if declared is not None and declared.isdigit() and int(declared) > limit:
            error = too_large(limit)
            # The client may still be sending: close rather than read it all.
            return error_response(413, error.code, error.message, {"Connection": "close"})
        return None
