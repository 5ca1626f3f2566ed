"""`worqr demo --keep`: after the summary, the demo's mesh, Redis and metrics
stay up with the web view and a trickle of work, so a newcomer can look
around; Ctrl-C (or SIGTERM, SIGHUP) ends it all."""

from __future__ import annotations

import contextlib
import itertools
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from redis.exceptions import RedisError

from .._clients.async_client import AsyncWorqr
from .._clients.sync_client import Worqr
from .._errors import WorqrError
from .._settings import Settings
from . import handlers

if TYPE_CHECKING:
    from .run import Demo

TRICKLE_SECONDS = 0.25  # one task and one report job each time: a few per second


def keep(demo: Demo, metrics: str) -> None:
    """Serve the web view and feed the mesh until Ctrl-C; then return (the
    demo then stops the mesh and its Redis as it always does)."""
    out = demo.out
    settings = Settings(prefix=demo.prefix, retry_deadline=3.0)
    with _web_view(demo.url, settings, out) as view, _trickle(demo.url, settings):
        out("")
        out("kept running until Ctrl-C, with a trickle of tasks and report jobs:")
        out(f"  redis     {demo.url} (key prefix {demo.prefix!r})")
        out(f"  metrics   {metrics}")
        out(view)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            out("")
            out("stopping")


@contextlib.contextmanager
def _web_view(url: str, settings: Settings, out: Callable[[str], None]) -> Iterator[str]:
    """The view's line to print; the view itself when Starlette and uvicorn are here."""
    try:
        from ..web.serve import WebServer
    except ImportError:
        yield "  web view  needs the http extra: pip install 'worqr[http]'"
        return
    token = secrets.token_urlsafe(12)
    server = WebServer(lambda: AsyncWorqr(url, settings=settings), token=token)
    server.start()
    try:
        yield f"  web view  {server.url} (token {token}: the page asks for it)"
    finally:
        server.stop()


@contextlib.contextmanager
def _trickle(url: str, settings: Settings) -> Iterator[None]:
    """A thread feeding the mesh: tasks (some fail: dead letters) and report
    jobs (some flaky, some failing, some delayed), so the view moves."""
    stop = threading.Event()

    def feed() -> None:
        with Worqr(url, settings=settings) as client:
            for n in itertools.count():
                if stop.wait(TRICKLE_SECONDS):
                    return
                with contextlib.suppress(WorqrError, RedisError):  # a demo: keep going
                    suffix = ":fail" if n % 40 == 39 else ""
                    client.enqueue(handlers.JOBS, f"keep-{n:05d}{suffix}")
                    kind = ("", "", ":flaky", "", ":fail", "", "", "")[n % 8] if n % 3 else ""
                    delay = 20.0 + n % 60 if n % 11 == 5 else None
                    client.submit(handlers.REPORTS, f"report-{n:05d}{kind}", delay=delay)

    thread = threading.Thread(target=feed, name="demo-trickle", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)
