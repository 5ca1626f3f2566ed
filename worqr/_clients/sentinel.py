"""Reaching Redis through Sentinel: where the master is, and clients that follow it.

A sentinel target comes from ``Worqr(sentinels=[(host, port), ...],
service_name=...)`` or from a URL::

    redis+sentinel://[[USERNAME]:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE_NAME[/DB]
        [?sentinel_password=...&sentinel_username=...]

USERNAME/PASSWORD authenticate to the master; ``sentinel_password`` (and
``sentinel_username``) to the sentinels, when they require it. Passwords never
appear in reprs, logs or error messages.

The clients are redis-py's ``master_for`` clients: each new connection asks the
sentinels where the master is, so after a failover the command client and the
pub/sub subscriber both reconnect to the promoted replica. worqr's own retry
rules apply unchanged (redis-py's resends stay off).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, unquote

import redis as redis_py
import redis.asyncio as aioredis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.sentinel import Sentinel

from .._checks import count
from .resend import no_redis_retries

SCHEME = "redis+sentinel"
_QUERY_KEYS = ("sentinel_password", "sentinel_username")


def is_sentinel_url(url: str | None) -> bool:
    return bool(url) and str(url).lower().startswith(SCHEME + "://")


def _address(text: str, where: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):  # [::1]:26379
        host = host[1:-1]
    if not sep or not host:
        raise ValueError(f"sentinel address {text!r} in {where} must be HOST:PORT")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"sentinel address {text!r} in {where} has a bad port")
    return host, int(port)


@dataclass(frozen=True, slots=True)
class SentinelTarget:
    """Where to find the master: the sentinels, the monitored service's name,
    the database, and the credentials (kept out of the repr)."""

    sentinels: tuple[tuple[str, int], ...]
    service_name: str
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    sentinel_username: str | None = None
    sentinel_password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.sentinels:
            raise ValueError("sentinels must name at least one (host, port)")
        for entry in self.sentinels:
            if (
                not isinstance(entry, tuple)
                or len(entry) != 2
                or not isinstance(entry[0], str)
                or not entry[0]
                or isinstance(entry[1], bool)
                or not isinstance(entry[1], int)
                or not 0 < entry[1] < 65536
            ):
                raise ValueError(f"each sentinel must be a (host, port) pair, got {entry!r}")
        if not isinstance(self.service_name, str) or not self.service_name.strip():
            raise ValueError("service_name must be a non-empty string (the name Sentinel monitors)")
        count("db", self.db)

    def url(self) -> str:
        """The URL form, without any password (safe to show)."""
        hosts = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.sentinels)
        return f"{SCHEME}://{hosts}/{quote(self.service_name, safe='')}/{self.db}"


def parse_sentinel_url(url: str) -> SentinelTarget:
    """The target a ``redis+sentinel://`` URL names; ValueError (naming the part
    that is wrong, never echoing a password) if it is malformed."""
    if not is_sentinel_url(url):
        raise ValueError(f"a sentinel URL starts with {SCHEME}://")
    rest = url[len(SCHEME) + 3 :]
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
        if not colon:  # redis://secret@host means a password, as in redis-py's URLs
            username, password = None, unquote(user) or None
    where = "the sentinel URL"
    if not hosts:
        raise ValueError(f"{where} names no sentinel: expected HOST:PORT[,HOST:PORT...]")
    sentinels = tuple(_address(part, where) for part in hosts.split(",") if part.strip())
    parts = [p for p in path.split("/") if p]
    if not parts:
        raise ValueError(f"{where} names no service: expected .../SERVICE_NAME[/DB]")
    if len(parts) > 2:
        raise ValueError(f"{where} path must be /SERVICE_NAME[/DB], got {len(parts)} parts")
    service = unquote(parts[0])
    db = 0
    if len(parts) == 2:
        if not parts[1].isdigit():
            raise ValueError(f"{where} database must be a number, got {parts[1]!r}")
        db = int(parts[1])
    options = parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(options) - set(_QUERY_KEYS))
    if unknown:
        raise ValueError(f"{where} has unknown options {unknown}; known: {', '.join(_QUERY_KEYS)}")
    sentinel_password = options.get("sentinel_password", [None])[-1]
    sentinel_username = options.get("sentinel_username", [None])[-1]
    return SentinelTarget(
        sentinels,
        service,
        db,
        username,
        password,
        sentinel_username or None,
        sentinel_password or None,
    )


def sentinel_target(
    url: str | None, sentinels: Iterable[Any] | None, service_name: str | None
) -> SentinelTarget | None:
    """The target a client was given (keyword arguments or a sentinel URL), or
    None for a plain ``redis://`` client."""
    if sentinels is None:
        if service_name is not None:
            raise ValueError("service_name needs sentinels=[(host, port), ...]")
        return parse_sentinel_url(url) if url and is_sentinel_url(url) else None
    if url is not None:
        raise ValueError("give either a URL or sentinels=..., not both")
    if isinstance(sentinels, str | bytes):
        raise TypeError("sentinels must be a list of (host, port) pairs, not a string")
    if service_name is None:
        raise ValueError("sentinels=... needs service_name (the name Sentinel monitors)")
    pairs = tuple(tuple(entry) if isinstance(entry, list) else entry for entry in sentinels)
    return SentinelTarget(pairs, service_name)


def _options(target: SentinelTarget, options: dict[str, Any], asynchronous: bool) -> Any:
    """Connection options for the sentinels themselves: short timeouts, no resends,
    so a dead sentinel is skipped at once."""
    timeout = min(float(options.get("socket_connect_timeout") or 1.0), 1.0)
    sentinel_kwargs: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "retry": no_redis_retries(asynchronous),
    }
    if target.sentinel_password is not None:
        sentinel_kwargs["password"] = target.sentinel_password
    if target.sentinel_username is not None:
        sentinel_kwargs["username"] = target.sentinel_username
    master = dict(options, db=target.db)
    if target.password is not None:
        master["password"] = target.password
    if target.username is not None:
        master["username"] = target.username
    return sentinel_kwargs, master


class _SentinelRedis(redis_py.Redis):
    """A master client that also closes its connections to the sentinels."""

    def close(self) -> None:
        try:
            super().close()
        finally:
            manager = getattr(self.connection_pool, "sentinel_manager", None)
            if manager is not None:
                manager.close()


class _AsyncSentinelRedis(aioredis.Redis):
    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        try:
            await super().aclose(close_connection_pool)
        finally:
            manager = getattr(self.connection_pool, "sentinel_manager", None)
            for client in getattr(manager, "sentinels", ()):
                await client.aclose()


def master_client(target: SentinelTarget, options: dict[str, Any]) -> redis_py.Redis:
    """A blocking client of the current master (it follows failovers)."""
    sentinel_kwargs, master = _options(target, options, asynchronous=False)
    manager = Sentinel(list(target.sentinels), sentinel_kwargs=sentinel_kwargs)  # type: ignore[no-untyped-call]
    client: redis_py.Redis = manager.master_for(  # type: ignore[no-untyped-call]
        target.service_name, redis_class=_SentinelRedis, **master
    )
    return client


def async_master_client(target: SentinelTarget, options: dict[str, Any]) -> aioredis.Redis:
    """An asyncio client of the current master (it follows failovers)."""
    sentinel_kwargs, master = _options(target, options, asynchronous=True)
    manager = AsyncSentinel(list(target.sentinels), sentinel_kwargs=sentinel_kwargs)  # type: ignore[no-untyped-call]
    client: aioredis.Redis = manager.master_for(
        target.service_name, redis_class=_AsyncSentinelRedis, **master
    )
    return client


def client_from_url(url: str, **options: Any) -> redis_py.Redis:
    """``redis.Redis.from_url`` that also understands ``redis+sentinel://``."""
    if is_sentinel_url(url):
        return master_client(parse_sentinel_url(url), options)
    return redis_py.Redis.from_url(url, **options)


def check_url(url: str) -> None:
    """Parse ``url`` (plain or sentinel) without connecting; ValueError if malformed."""
    if is_sentinel_url(url):
        parse_sentinel_url(url)
    else:
        redis_py.Redis.from_url(url).close()


def cli_url(
    sentinels: Sequence[str] | None, service_name: str | None, url: str | None
) -> str | None:
    """The URL that ``--sentinel HOST:PORT`` (repeated) and ``--service-name``
    stand for; ``url`` unchanged when no sentinel was given."""
    if not sentinels:
        if service_name is not None:
            raise ValueError("--service-name needs --sentinel HOST:PORT")
        return url
    if url is not None:
        raise ValueError("give either --url or --sentinel, not both")
    if not service_name:
        raise ValueError("--sentinel needs --service-name (the name Sentinel monitors)")
    pairs = tuple(_address(entry, "--sentinel") for entry in sentinels)
    return SentinelTarget(pairs, service_name).url()
