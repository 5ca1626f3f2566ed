"""The HTTP API of a worqr mesh (`worqr http`; needs the extra ``worqr[http]``:
Starlette and uvicorn). Import it explicitly: ``from worqr.http import create_app``.

Modules, one job each: `app` (the factory and its contract with the web view),
`auth` (the bearer token), `security` (body limit, Host, cross-site
mutations), `config`, `errors` (JSON errors, stable codes), `inputs` (reading
requests), `views` (job records as JSON), `jobs` and `queues` (the routes),
`sse` (a job's event stream), `openapi` (``/openapi.json``).
"""

from .app import create_app
from .auth import require_token
from .config import HttpConfig
from .errors import ApiError

__all__ = ["ApiError", "HttpConfig", "create_app", "require_token"]
