"""The worker runtime under test: `FAST` worker settings, and a `Runner` that
keeps workers in threads and always stops them (fixture ``runner`` in
tests/runtime/conftest.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import worqr
from tests.support.timing import FAST


def worker_settings(
    prefix: str, client: dict[str, Any] | None = None, **changes: Any
) -> worqr.WorkerSettings:
    """`worqr.WorkerSettings` of the mesh ``prefix``: `FAST` client timers
    (updated with ``client``) and the worker fields in ``changes``."""
    options = {**FAST, **(client or {})}
    return worqr.WorkerSettings(client=worqr.Settings(prefix=prefix, **options), **changes)


WorkerFactory = Callable[..., worqr.Worker]
"""The type of the ``new_worker`` fixture (tests/runtime/conftest.py)."""


class Runner:
    """Runs workers in threads and stops them all at the end of a test."""

    def __init__(self) -> None:
        self.threads: list[tuple[worqr.Worker, threading.Thread]] = []

    def start(self, worker: worqr.Worker, run: Callable[[], object] | None = None) -> worqr.Worker:
        """Run ``worker`` in a thread (``worker.run``, or ``run`` that runs it)
        and wait until it has started."""
        thread = threading.Thread(target=run or worker.run, daemon=True)
        thread.start()
        self.threads.append((worker, thread))
        assert worker.wait_started(10), "worker did not start"
        return worker

    def stop(self, worker: worqr.Worker, timeout: float = 15, *, now: bool = False) -> None:
        for candidate, thread in self.threads:
            if candidate is worker:
                worker.stop(now=now)
                thread.join(timeout)
                assert not thread.is_alive(), "worker did not stop"

    def stop_all(self) -> None:
        """Teardown: stop every worker now and wait for its thread."""
        for worker, thread in self.threads:
            worker.stop(now=True)
            thread.join(15)
