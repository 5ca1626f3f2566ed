"""Building the two Redis connections a client uses (commands and pub/sub)."""

from __future__ import annotations

import os
from typing import Any

from redis.asyncio import Redis as AsyncRedis

from ._retry import no_redis_retries
from ._settings import Settings

DEFAULT_URL = "redis://127.0.0.1:6379/0"


def resolve_url(url: str | None) -> str:
    """``url``, else ``$WORQR_REDIS_URL``, else the local default."""
    return url or os.environ.get("WORQR_REDIS_URL") or DEFAULT_URL


def command_options(settings: Settings, asynchronous: bool = False) -> dict[str, Any]:
    return {
        "socket_timeout": settings.socket_timeout,
        "socket_connect_timeout": min(settings.socket_timeout, 5.0),
        "retry": no_redis_retries(asynchronous),
        "decode_responses": False,
    }


def subscriber_options(settings: Settings, asynchronous: bool = False) -> dict[str, Any]:
    # Reads wait for messages with their own timeout; the health check notices a
    # connection that died silently.
    return {
        "socket_timeout": None,
        "socket_connect_timeout": min(settings.socket_timeout, 5.0),
        "retry": no_redis_retries(asynchronous),
        "decode_responses": False,
        "health_check_interval": max(1, round(settings.poll_interval)),
    }


def check_client(client: Any, role: str) -> None:
    """A client passed in must return bytes (tasks may be binary) and must not
    resend commands on its own (a resend can duplicate a task)."""
    encoder = client.get_encoder()
    if getattr(encoder, "decode_responses", False):
        raise ValueError(f"the {role} client must be created with decode_responses=False")
    client.set_retry(no_redis_retries(isinstance(client, AsyncRedis)))
