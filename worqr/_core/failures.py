"""When to resend a call, and what to raise when giving up. Shared by both clients.

redis-py's own retries are switched off on every client worqr uses: they resend
any command after a timeout, which can push a task twice (design invariant 5).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import AskError, NoScriptError, RedisError, ResponseError
from redis.retry import Retry
from tenacity import retry_if_exception, stop_after_delay, wait_exponential, wait_random

from .._errors import AmbiguousResultError, RedisUnavailableError, WorqrError
from .calls import Call, Pinned, Request, is_connection_error, may_resend, never_sent, refused
from .lua import translate

logger = logging.getLogger("worqr")


def no_redis_retries(asynchronous: bool = False) -> Retry | AsyncRetry:
    """redis-py's retry object that never resends. An asyncio client needs the
    asyncio class: given the sync one, it never runs the failure callback that
    reconnects a broken pub/sub connection (which then stays broken until the
    next health check)."""
    return AsyncRetry(NoBackoff(), 0) if asynchronous else Retry(NoBackoff(), 0)


def tenacity_options(request: Request, deadline: float) -> dict[str, Any]:
    """Arguments for tenacity's ``Retrying``/``AsyncRetrying``: resend ``request``
    with jittered exponential backoff while that is safe, for ``deadline`` seconds."""
    return {
        "retry": retry_if_exception(lambda error: may_resend(request, error)),
        "stop": stop_after_delay(deadline),
        # 20 ms doubling to 1 s, plus up to 20 ms of jitter. (Not wait_exponential_jitter:
        # its `initial` is deprecated in tenacity 9.2 and `multiplier` is missing in 8.x.)
        "wait": wait_exponential(multiplier=0.02, max=1.0) + wait_random(0, 0.02),
        "reraise": True,
    }


def describe(request: Request) -> str:
    if isinstance(request, Call):
        return f"script {request.script}" if request.script else f"command {request.args[0]!r}"
    if isinstance(request, Pinned):
        return " then ".join(describe(call) for call in request.calls)
    return "subscribe"


def _redirected(error: BaseException) -> bool:
    """A cluster redirection (redis-py < 8 parses it as a plain ResponseError
    outside a cluster client)."""
    if isinstance(error, AskError):
        return True
    return isinstance(error, ResponseError) and str(error).startswith(("MOVED ", "ASK "))


def final_error(request: Request, error: BaseException) -> BaseException:
    """What a call that failed for good raises: script error codes become worqr
    exceptions; connection trouble becomes ambiguous (maybe applied) or unavailable."""
    if _redirected(error):  # MOVED or ASK reached a standalone client
        return WorqrError(
            f"Redis answered {describe(request)} with a cluster redirection ({error}): "
            "it is a Redis Cluster node; connect with cluster=True (--cluster on the "
            "command line)"
        )
    if refused(error) and not isinstance(error, NoScriptError):
        # A cluster that kept redirecting (a slot migrating, no node serving it):
        # nothing was applied.
        return RedisUnavailableError(
            f"Redis Cluster did not run {describe(request)}: {type(error).__name__}: {error}"
        )
    if isinstance(error, ResponseError):
        return translate(error)
    if is_connection_error(error):
        if isinstance(request, Call | Pinned) and not request.idempotent and not never_sent(error):
            return AmbiguousResultError(
                f"{describe(request)} may or may not have been applied: the connection "
                f"failed after it was sent ({type(error).__name__}: {error}); "
                "it was not resent, to avoid applying it twice"
            )
        return RedisUnavailableError(
            f"Redis is unavailable for {describe(request)}: {type(error).__name__}: {error}"
        )
    return error


class OutageLog:
    """Logs an outage once when it starts and once when it ends, not per retry."""

    def __init__(self, what: str, emit: Callable[..., None] | None = None) -> None:
        self.what = what
        self.emit = emit
        self.since: float | None = None
        self.failures = 0

    def failed(self, error: BaseException) -> None:
        self.failures += 1
        if self.since is None:
            self.since = time.monotonic()
            if self.emit is not None:
                self.emit("redis_down", what=self.what, error=type(error).__name__)
            if isinstance(error, RedisError | OSError | RedisUnavailableError):
                logger.warning("%s: Redis unreachable (%s); retrying", self.what, error)
            else:
                logger.exception("%s failed; retrying", self.what, exc_info=error)

    def ok(self) -> None:
        if self.since is not None:
            if self.emit is not None:
                self.emit("redis_up", what=self.what, seconds=time.monotonic() - self.since)
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
