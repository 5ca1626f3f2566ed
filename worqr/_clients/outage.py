"""Logging and reporting an outage once, not once per retry."""

from __future__ import annotations

import logging
import time

from redis.exceptions import RedisError

from .._errors import RedisUnavailableError
from .._hooks import Hooks

logger = logging.getLogger("worqr")


class OutageLog:
    """Logs an outage once when it starts and once when it ends, not per retry."""

    def __init__(self, what: str, hooks: Hooks | None = None) -> None:
        self.what = what
        self.hooks = hooks
        self.since: float | None = None
        self.failures = 0

    def failed(self, error: BaseException) -> None:
        self.failures += 1
        if self.since is None:
            self.since = time.monotonic()
            if self.hooks is not None:
                self.hooks.on_redis_down(self.what, type(error).__name__)
            if isinstance(error, RedisError | OSError | RedisUnavailableError):
                logger.warning("%s: Redis unreachable (%s); retrying", self.what, error)
            else:
                logger.exception("%s failed; retrying", self.what, exc_info=error)

    def ok(self) -> None:
        if self.since is not None:
            if self.hooks is not None:
                self.hooks.on_redis_up(self.what, time.monotonic() - self.since)
            logger.warning(
                "%s: Redis reachable again after %.1f s (%d failed attempts)",
                self.what,
                time.monotonic() - self.since,
                self.failures,
            )
            self.since = None
            self.failures = 0

    def backoff(self) -> float:
        """Seconds to wait before the next attempt of a loop."""
        return float(min(2.0, 0.05 * 2 ** min(self.failures, 6)))
