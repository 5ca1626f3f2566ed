"""The HTTP API of a worqr mesh (`worqr http`; needs the extra ``worqr[http]``:
Starlette, uvicorn and pydantic). Import it explicitly: ``from worqr.http
import create_app``.

Modules, one job each: `app` (the factory and its contract with the web view),
`auth` (the bearer token), `security` (body limit, Host, cross-site
mutations), `config`, `errors` (JSON errors, stable codes), `models` (what
requests may hold) and `replies` (what answers hold), `operations` (each
operation declared once: routes and document come from it), `inputs`
(reading requests through the models), `views` (the replies built from the
library's reads: job records, queue and worker rows, limits; the web view's too),
`jobs`, `queues` and `limits` (the operations), `sse` (a job's event stream),
`openapi` (``/openapi.json``, written from the operations and models).
"""

from .app import create_app
from .auth import require_token
from .config import HttpConfig
from .errors import ApiError

__all__ = ["ApiError", "HttpConfig", "create_app", "require_token"]
