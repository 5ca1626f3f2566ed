"""When the supervisor restarts a dead child, and when it gives up.

gunicorn's and supervisord's practice: only start-up failures count toward
giving up. A *start-up failure* is a child that exited on its own (a non-zero
status, or a crash signal such as SIGSEGV or SIGABRT) before it was ready, or
less than `RestartPolicy.stable_after` seconds after: what a crash loop is made
of (an import error, a bad setting, a handler that kills its process at once).
A child killed by a signal someone sent (`KILLED_BY`: an operator, the OOM
killer, a test, a deploy), or one that had run healthily, never counts.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from .._checks import count, seconds

KILLED_BY = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
"""Deaths by these signals are someone's decision, not a crash of the child's own."""


@dataclass(frozen=True)
class RestartPolicy:
    """When and how often dead children are restarted.

    Attributes:
        backoff: seconds before a dead child is restarted (the first time).
        max_backoff: cap of the backoff, which doubles while a slot's children
            keep failing at start-up.
        stable_after: a child that exits on its own less than this long after it
            was ready still failed at start-up; after it, it was healthy.
        max_start_failures: most start-up failures (all children together)
            restarted within any `failure_window` seconds; the next stops the
            supervisor with exit code 1. 0: the first start-up failure stops
            everything. Killed or healthy children are always restarted.
        failure_window: seconds over which `max_start_failures` is counted.
    """

    backoff: float = 0.2
    max_backoff: float = 10.0
    stable_after: float = 10.0
    max_start_failures: int = 10
    failure_window: float = 60.0

    def __post_init__(self) -> None:
        for name in ("backoff", "max_backoff", "stable_after", "failure_window"):
            seconds(name, getattr(self, name), above=True)
        count("max_start_failures", self.max_start_failures)

    def delay(self, failures: int) -> float:
        """The backoff after a slot's ``failures``-th start-up failure in a row."""
        return float(min(self.max_backoff, self.backoff * 2 ** max(0, failures - 1)))

    def start_up_failure(self, code: int, ready_for: float | None) -> bool:
        """Whether a child that exited with ``code`` (negative: killed by that
        signal) after being ready for ``ready_for`` seconds (None: it never was)
        failed at start-up. Exit 0 means it stopped when told to."""
        killed = code == 0 or (code < 0 and -code in KILLED_BY)
        healthy = ready_for is not None and ready_for >= self.stable_after
        return not killed and not healthy
