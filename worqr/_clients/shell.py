"""What the sync and async clients share that does no I/O: settings, the core,
the URL, the Redis clients and scripts they execute on, and the hooks into the
client's life."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._checks import flag
from .._core import Core
from .._hooks import Hooks, Observer, ObserverHooks
from .._settings import Settings, with_overrides
from .connect import (
    check_client,
    command_client,
    is_cluster,
    require_cluster_support,
    resolve_url,
    timed_by_worqr,
)
from .sentinel import sentinel_target


class Shell:
    """Base of `Worqr` and `AsyncWorqr`; they add only the code that waits on I/O.

    ``redis`` and ``subscriber`` are clients passed in (else the shell creates the
    command client; the subscriber is created on first use). A
    ``RedisCluster`` passed as ``redis`` implies ``cluster=True``. ``sentinels``
    and ``service_name`` (or a ``redis+sentinel://`` URL) reach the master through
    Sentinel.
    """

    def __init__(
        self,
        url: str | None,
        settings: Settings | None,
        *,
        prefix: str | None,
        ttl: float | None,
        heartbeat: float | None,
        max_recoveries: int | None,
        redis: Any,
        subscriber: Any,
        cluster: bool,
        asynchronous: bool,
        sentinels: Iterable[Any] | None = None,
        service_name: str | None = None,
    ) -> None:
        flag("cluster", cluster)
        self.settings = with_overrides(
            settings or Settings(),
            prefix=prefix,
            ttl=ttl,
            heartbeat=heartbeat,
            max_recoveries=max_recoveries,
        )
        self._cluster = cluster or is_cluster(redis)
        if self._cluster:
            require_cluster_support(asynchronous)
        self._url = resolve_url(url) if sentinels is None else ""
        # Set when Redis is reached through Sentinel (sentinels=..., or a
        # redis+sentinel:// URL, also from $WORQR_REDIS_URL); None otherwise.
        self._sentinel = sentinel_target(
            url if sentinels is not None else self._url, sentinels, service_name
        )
        if self._sentinel is not None and self._cluster:
            raise ValueError("Sentinel and cluster=True do not mix: a cluster fails over itself")
        # Clients passed in are checked (and their resends switched off) before
        # anything is created, so a bad one leaves nothing behind.
        for role, client in (("redis", redis), ("subscriber", subscriber)):
            if client is not None:
                check_client(client, role, asynchronous=asynchronous, cluster=self._cluster)
        self._own_redis = redis is None
        self._own_subscriber = subscriber is None
        # Seconds AsyncWorqr gives each command, when its client leaves that to it.
        timed = timed_by_worqr(
            asynchronous=asynchronous, cluster=self._cluster, sentinel=self._sentinel
        )
        self._command_timeout = self.settings.socket_timeout if redis is None and timed else None
        if redis is None:
            redis = command_client(
                self._url,
                self.settings,
                asynchronous=asynchronous,
                cluster=self._cluster,
                sentinel=self._sentinel,
            )
        self._redis: Any = redis
        self._subscriber: Any = subscriber
        self._core = Core(self.settings, cluster=self._cluster)

    def __repr__(self) -> str:  # never the URL: it may hold a password
        name = type(self).__name__
        return f"{name}(prefix={self.settings.prefix!r}, worker_id={self.worker_id!r})"

    @property
    def worker_id(self) -> str | None:
        """This client's id in the mesh; None before `start_worker()`."""
        return self._core.state.worker_id

    def lease_fresh(self) -> bool:
        """False when this worker has not heartbeat for most of its TTL."""
        return self._core.state.lease_fresh()

    def add_hooks(self, hooks: Hooks) -> None:
        """Report this client's life to ``hooks`` (a `worqr.Hooks`): registered,
        lease lost, peer failed, heartbeat failed, Redis down and up again."""
        self._core.state.hooks.add(hooks)

    def add_observer(self, observer: Observer) -> None:
        """Call ``observer(event, fields)`` on the client's life events, the same
        as `add_hooks` reports them: "registered" (worker), "lease_lost" (worker),
        "peer_failed" (worker, requeued, dead_lettered), "heartbeat_failed"
        (error), "redis_down" (what, error), "redis_up" (what, seconds)."""
        self._core.state.hooks.add(ObserverHooks(observer))
