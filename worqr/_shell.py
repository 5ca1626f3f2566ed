"""What the sync and async clients share that does no I/O: settings, the core,
the URL, and the hooks into the client's life."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ._connect import resolve_url
from ._core import Core, Observer
from ._sentinel import sentinel_target
from ._settings import Settings, with_overrides


class Shell:
    """Base of `Worqr` and `AsyncWorqr`; they add only the code that waits on I/O."""

    def __init__(
        self,
        url: str | None,
        settings: Settings | None,
        *,
        prefix: str | None,
        ttl: float | None,
        heartbeat: float | None,
        max_recoveries: int | None,
        sentinels: Iterable[Any] | None = None,
        service_name: str | None = None,
    ) -> None:
        self.settings = with_overrides(
            settings or Settings(),
            prefix=prefix,
            ttl=ttl,
            heartbeat=heartbeat,
            max_recoveries=max_recoveries,
        )
        self._core = Core(self.settings)
        self._url = resolve_url(url) if sentinels is None else ""
        # Set when Redis is reached through Sentinel (sentinels=..., or a
        # redis+sentinel:// URL, also from $WORQR_REDIS_URL); None otherwise.
        self._sentinel = sentinel_target(
            url if sentinels is not None else self._url, sentinels, service_name
        )

    def __repr__(self) -> str:  # never the URL: it may hold a password
        name = type(self).__name__
        return f"{name}(prefix={self.settings.prefix!r}, worker_id={self.worker_id!r})"

    @property
    def worker_id(self) -> str | None:
        """This client's id in the mesh; None before `start_worker()`."""
        return self._core.worker_id

    def lease_fresh(self) -> bool:
        """False when this worker has not heartbeat for most of its TTL."""
        return self._core.lease_fresh()

    def add_observer(self, observer: Observer) -> None:
        """Call ``observer(event, fields)`` on the client's life events (see
        `worqr._core.Observer`): registered, lease_lost, peer_failed,
        heartbeat_failed, redis_down, redis_up."""
        self._core.observers.append(observer)

    def add_lease_lost_hook(self, hook: Callable[[str], object]) -> None:
        """Call ``hook(old_worker_id)`` when this worker learns it was failed."""
        self._core.lease_lost_hooks.append(hook)
