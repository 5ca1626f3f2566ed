"""The bearer token: reading it, checking it, and where it is required.

`require_token(request)` is the one check, for the API's operations (each
calls it before reading any input) and for any route added through
``create_app(extra_routes=...)`` (the web view guards its reads and mutations
with it). The token only ever comes in the ``Authorization: Bearer``
header, never a cookie or a query string, so a page of another site cannot
make a browser send it (no CSRF), and it never lands in an access log.
"""

from __future__ import annotations

import hmac
import ipaddress
from pathlib import Path

from starlette.requests import Request

from .config import CONFIG_SCOPE_KEY, HttpConfig
from .errors import ApiError

MIN_TOKEN_CHARS = 16


def require_token(request: Request) -> None:
    """Raise a 401 `ApiError` (JSON ``unauthorized``) unless the request carries
    ``Authorization: Bearer <token>`` with the configured token; do nothing
    when the app has no token (it then listens on loopback only). Compared in
    constant time."""
    config = request.scope.get(CONFIG_SCOPE_KEY)
    token: str | None = config.token if isinstance(config, HttpConfig) else request.app.state.token
    if token is None:
        return
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        raise _unauthorized("this server needs the header 'Authorization: Bearer <token>'")
    if not hmac.compare_digest(given.strip().encode("utf-8"), token.encode("utf-8")):
        raise _unauthorized("the bearer token is not this server's")


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, {"WWW-Authenticate": 'Bearer realm="worqr"'})


def read_token_file(path: str | Path) -> str:
    """The token in ``path`` (surrounding whitespace removed). Raises
    `ValueError` for an empty or short token; the message never holds it."""
    text = Path(path).read_text("utf-8").strip()
    if not text:
        raise ValueError(f"the token file {str(path)!r} is empty")
    if len(text) < MIN_TOKEN_CHARS or any(char.isspace() for char in text):
        raise ValueError(
            f"the token in {str(path)!r} must be one word of at least {MIN_TOKEN_CHARS} "
            "characters (make one with: python -c 'import secrets; print(secrets.token_urlsafe())')"
        )
    return text


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server reachable from this machine only
    ("localhost" or a loopback address; any other name could resolve anywhere)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
