"""The child's side of `worqr worker --processes N`: report readiness to the
supervisor, and stop when it is gone."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable

logger = logging.getLogger("worqr.supervisor")

READY_ENV = "WORQR_READY_FD"
"""The environment variable that tells a child the fd to report readiness on."""


def ready_fd() -> int | None:
    """In a supervised child: the fd to report readiness on (`report_ready`),
    taken out of the environment (so that what the child starts does not see it)."""
    fd = os.environ.pop(READY_ENV, None)
    return int(fd) if fd is not None and fd.isdigit() else None


def report_ready(fd: int | None) -> None:
    """In a supervised child: tell the supervisor this child is ready (its
    worker registered and joined its queues). Once; a no-op for None."""
    if fd is not None:
        with contextlib.suppress(OSError):  # the supervisor is gone: nobody to tell
            os.write(fd, b"R")
            os.close(fd)


def watch_parent(on_orphaned: Callable[[], object]) -> threading.Thread:
    """In a supervised child: call ``on_orphaned()`` when stdin (the pipe from
    the supervisor) reaches EOF, i.e. when the supervisor has died."""

    def wait_for_eof() -> None:
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        logger.warning("the supervisor is gone; stopping this worker process")
        on_orphaned()

    thread = threading.Thread(target=wait_for_eof, name="worqr-parent-watch", daemon=True)
    thread.start()
    return thread
