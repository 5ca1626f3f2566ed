"""Who resends a command, and how.

redis-py resends any command after a timeout by default, which can push a task
twice; worqr switches that off on every client it uses (`no_redis_retries`)
and resends with tenacity instead, only what `calls.may_resend` says is safe
(`tenacity_options`)."""

from __future__ import annotations

from typing import Any

from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry
from tenacity import retry_if_exception, stop_after_delay, wait_exponential, wait_random

from .._core.calls import Request, may_resend

NEVER_RESEND = Retry(NoBackoff(), 0)
"""One shared sync retry object, so a check that a client got it is an identity test."""


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
