"""Warn when Redis may evict keys: an evicted list or hash loses tasks silently."""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import ResponseError

from .calls import Plan, command

logger = logging.getLogger("worqr")


def check_eviction_policy() -> Plan[None]:
    """Read ``maxmemory-policy`` once and warn unless it is ``noeviction``.

    Advice only: a user without the CONFIG command (an ACL, or a managed Redis
    that renames it) starts all the same.
    """
    try:
        reply: Any = yield command("CONFIG", "GET", "maxmemory-policy")
    except ResponseError as error:
        logger.debug("cannot read maxmemory-policy (%s); eviction check skipped", error)
        return
    values = list(reply.values()) if isinstance(reply, dict) else list(reply[1::2])
    for value in values:
        policy = value.decode() if isinstance(value, bytes) else str(value)
        if policy != "noeviction":
            logger.warning(
                "Redis's maxmemory-policy is %s: when it reaches maxmemory it evicts keys, "
                "and an evicted queue or process loses tasks; set maxmemory-policy noeviction",
                policy,
            )
