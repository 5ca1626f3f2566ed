"""Building and checking the Redis clients a worqr client uses (commands and
pub/sub), standalone or Redis Cluster. The one place that knows redis-py's
client classes and their retry knobs."""

from __future__ import annotations

import os
from typing import Any

import redis as redis_py
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.client import PubSub as AsyncPubSub
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.connection import Connection as AsyncConnection
from redis.asyncio.connection import ConnectionPool as AsyncConnectionPool
from redis.asyncio.connection import SSLConnection as AsyncSSLConnection
from redis.asyncio.connection import UnixDomainSocketConnection as AsyncUnixConnection
from redis.cluster import ClusterNode, RedisCluster

from .._errors import WorqrError
from .._settings import Settings
from .packing import pack_with_hiredis
from .resend import NEVER_RESEND, no_redis_retries
from .sentinel import SentinelTarget, async_master_client, master_client

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


def is_cluster(client: Any) -> bool:
    return isinstance(client, RedisCluster | AsyncRedisCluster)


def check_client(client: Any, role: str, *, asynchronous: bool, cluster: bool) -> None:
    """A client passed in must be of the client's colour and mode, return bytes
    (tasks may be binary) and must not resend commands on its own (a resend can
    duplicate a task)."""
    expected: tuple[type, ...]
    if cluster:
        expected = (AsyncRedisCluster,) if asynchronous else (RedisCluster,)
    else:
        expected = (AsyncRedis,) if asynchronous else (redis_py.Redis,)
    if not isinstance(client, expected):
        kind = "redis.asyncio" if asynchronous else "redis"
        want = f"{kind}.cluster.RedisCluster" if cluster else f"{kind}.Redis"
        raise TypeError(f"the {role} client must be a {want}, not {type(client).__name__}")
    encoder = client.get_encoder()
    if getattr(encoder, "decode_responses", False):
        raise ValueError(f"the {role} client must be created with decode_responses=False")
    target: Any = client
    target.set_retry(no_redis_retries(asynchronous))
    if cluster:
        # redis-py < 6 reads this attribute instead of the retry object: both say
        # "never resend" (a RedisCluster resends after a timeout by default).
        target.cluster_error_retry_attempts = 0


def cluster_node_client(cluster: RedisCluster, node: Any) -> redis_py.Redis:
    """redis-py's plain client of one node of ``cluster``, for a pipeline pinned
    to that node (`worqr._core.pinned`). A pipeline resends through its connection's
    retry object (the cluster's own commands do not), and what the cluster gives
    its node clients differs across redis-py versions: worqr's never resends."""
    client: redis_py.Redis = cluster.get_redis_connection(node)
    if client.get_retry() is not NEVER_RESEND:
        client.set_retry(NEVER_RESEND)
    return client


def require_cluster_support(asynchronous: bool) -> None:
    """Sharded pub/sub in ``redis.asyncio`` came with redis-py 8.0; without it an
    asyncio client could not listen the way the mesh's scripts publish."""
    if asynchronous and not hasattr(AsyncPubSub, "ssubscribe"):
        raise WorqrError(
            f"AsyncWorqr(cluster=True) needs redis-py >= 8.0 (installed: {redis_py.__version__}); "
            "the sync Worqr works on a cluster with redis-py >= 5.0"
        )


def command_client(
    url: str,
    settings: Settings,
    *,
    asynchronous: bool,
    cluster: bool,
    sentinel: SentinelTarget | None = None,
) -> Any:
    """A new command client for ``url``: standalone, through Sentinel, or
    cluster; sync or asyncio."""
    options = command_options(settings, asynchronous)
    if timed_by_worqr(asynchronous=asynchronous, cluster=cluster, sentinel=sentinel):
        options["socket_timeout"] = None  # AsyncWorqr bounds each command itself
        return pack_with_hiredis(AsyncRedis.from_url(url, **options))
    if sentinel is not None:  # follows the master across failovers
        return master_for(sentinel, options, asynchronous=asynchronous)
    if not cluster:
        return redis_py.Redis.from_url(url, **options)
    # A RedisCluster takes its own retry object (no resends: see check_client);
    # its nodes' connections never resend either.
    retry = options.pop("retry")
    kind = AsyncRedisCluster if asynchronous else RedisCluster
    client: Any = kind.from_url(url, retry=retry, **options)
    client.cluster_error_retry_attempts = 0
    return client


def timed_by_worqr(*, asynchronous: bool, cluster: bool, sentinel: object) -> bool:
    """Whether worqr, not redis-py, bounds each command of a command client it
    builds to ``socket_timeout``: an asyncio standalone one. redis-py's asyncio
    connection arms a timer for each write (a new task, through ``wait_for``)
    and each read, about 25 µs a command; one timer around the whole command
    does the same job (a late reply is an ambiguous timeout either way)."""
    return asynchronous and not cluster and sentinel is None


def subscriber_client(
    url: str, settings: Settings, *, asynchronous: bool, sentinel: SentinelTarget | None = None
) -> Any:
    """A new standalone pub/sub client for ``url`` (or the Sentinel master)."""
    options = subscriber_options(settings, asynchronous)
    if sentinel is not None:
        return master_for(sentinel, options, asynchronous=asynchronous)
    kind = AsyncRedis if asynchronous else redis_py.Redis
    return kind.from_url(url, **options)


def master_for(target: SentinelTarget, options: dict[str, Any], *, asynchronous: bool) -> Any:
    if asynchronous:
        return async_master_client(target, options)
    return master_client(target, options)


# Connection settings a client passed in shares with its sync twin (plain data,
# the same for both colours of redis-py).
_TWIN_SETTINGS = (
    "host",
    "port",
    "path",
    "db",
    "username",
    "password",
    "credential_provider",
    "client_name",
    "protocol",
    "socket_timeout",
    "socket_connect_timeout",
    "socket_keepalive",
    "socket_keepalive_options",
    "ssl_keyfile",
    "ssl_certfile",
    "ssl_cert_reqs",
    "ssl_ca_certs",
    "ssl_ca_data",
    "ssl_ca_path",
    "ssl_check_hostname",
    "ssl_password",
    "ssl_min_version",
    "ssl_ciphers",
)


def _twin_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {name: kwargs[name] for name in _TWIN_SETTINGS if name in kwargs}


def sync_twin(
    url: str,
    settings: Settings,
    *,
    cluster: bool,
    sentinel: SentinelTarget | None,
    passed_in: Any,
) -> redis_py.Redis | RedisCluster | None:
    """A sync command client that reaches what an asyncio client reaches, for the
    lease thread of `AsyncWorqr`: built from the URL (or Sentinel) as the asyncio
    one was, or copied from the client passed in (standalone or cluster, over
    TCP, TLS or a Unix socket). None when a client passed in cannot be copied
    (e.g. one from an asyncio Sentinel)."""
    if passed_in is None:
        client: Any = command_client(
            url, settings, asynchronous=False, cluster=cluster, sentinel=sentinel
        )
        return client  # type: ignore[no-any-return]
    if isinstance(passed_in, AsyncRedisCluster):
        nodes = [
            ClusterNode(node.host, node.port)  # type: ignore[no-untyped-call]
            for node in passed_in.get_nodes()
        ]
        twin: Any = RedisCluster(
            startup_nodes=nodes, retry=NEVER_RESEND, **_twin_kwargs(passed_in.connection_kwargs)
        )
        twin.cluster_error_retry_attempts = 0  # redis-py < 6 reads this instead (check_client)
        return twin  # type: ignore[no-any-return]
    pool = passed_in.connection_pool
    kinds = {
        AsyncConnection: redis_py.Connection,
        AsyncSSLConnection: redis_py.SSLConnection,
        AsyncUnixConnection: redis_py.UnixDomainSocketConnection,
    }
    kind = kinds.get(pool.connection_class) if type(pool) is AsyncConnectionPool else None
    if kind is None:
        return None
    connections = redis_py.ConnectionPool(
        connection_class=kind, retry=no_redis_retries(), **_twin_kwargs(pool.connection_kwargs)
    )
    return redis_py.Redis(connection_pool=connections)
