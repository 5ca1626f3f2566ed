"""`Clients`: the one factory of `worqr.Worqr` clients in the suite.

conftest.py builds one per test (fixture ``clients``) on the test's server and
prefix, and exposes ``make`` (= ``clients.make``), ``wq`` (a client) and
``worker`` (a started worker). Every client it made is closed at teardown, all
at once (each close waits for its listener thread). Clients get `QUIET`
timers unless a test says otherwise.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import worqr
from tests.support.timing import QUIET

Factory = Callable[..., worqr.Worqr]
"""The type of ``make``: ``make(url=None, *, start=False, **settings)``."""


class Clients:
    """Factory of clients of one mesh; `close_all()` closes them."""

    def __init__(self, url: str, prefix: str, *, cluster: bool = False) -> None:
        self.url = url
        self.prefix = prefix
        self.cluster = cluster
        self.opened: list[worqr.Worqr] = []

    def make(self, url: str | None = None, *, start: bool = False, **settings: Any) -> worqr.Worqr:
        """A client of the mesh (of the server at ``url``, default the test's).
        ``settings`` are `worqr.Settings` fields over `QUIET`, plus ``redis=`` to
        bring a command client of one's own; ``start=True`` starts its worker."""
        values: dict[str, Any] = {"prefix": self.prefix, **QUIET, **settings}
        redis_client = values.pop("redis", None)
        options: dict[str, Any] = {"cluster": True} if self.cluster else {}
        client = worqr.Worqr(
            url or self.url, redis=redis_client, settings=worqr.Settings(**values), **options
        )
        self.opened.append(client)
        if start:
            client.start_worker()
        return client

    def worker(self, *queues: str, **settings: Any) -> worqr.Worqr:
        """A started worker that works on ``queues``."""
        client = self.make(start=True, **settings)
        for queue in queues:
            client.start_work(queue)
        return client

    def close_all(self) -> None:
        """Close every client, all at once: each close waits for its listener
        thread (up to a quarter second), so one by one would add up."""
        errors: list[BaseException] = []

        def close(client: worqr.Worqr) -> None:
            try:
                client.close()
            except Exception as error:  # close the others anyway
                errors.append(error)

        threads = [threading.Thread(target=close, args=(c,)) for c in self.opened]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        self.opened.clear()
        if errors:
            raise errors[0]
