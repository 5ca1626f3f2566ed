"""The web view of a worqr mesh: queues, workers, jobs, dead letters and
recoveries, live in a browser. Needs Starlette (``pip install 'worqr[http]'``).

`web_routes` gives the routes to mount in an application (the HTTP API's, or
your own); `standalone_app` is a ready application serving only the view.
"""

from .app import bearer_guard, standalone_app
from .routes import web_routes

__all__ = ["bearer_guard", "standalone_app", "web_routes"]
