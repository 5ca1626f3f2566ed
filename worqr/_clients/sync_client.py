"""`Worqr`: the synchronous client. Executes the core's plans; threads run the
heartbeat and the pub/sub listener."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from types import TracebackType
from typing import Any, TypeVar

import redis as redis_py
from redis.client import PubSub
from redis.cluster import RedisCluster

from .._core.calls import Plan, Request, Subscribe
from .._settings import Settings
from .connect import subscriber_client, subscriber_options
from .outage import OutageLog
from .pubsub_guard import PubSubGuard
from .shards import ClusterSubscriber
from .sync_api import SyncApi
from .sync_exec import SyncExecutor
from .sync_job_api import SyncInternals

T = TypeVar("T")
logger = logging.getLogger("worqr")


class Worqr(SyncApi):
    """A client of one worqr mesh: produce tasks, and optionally be a worker.

    See the README for the semantics of each method. Thread-safe for use from
    several threads; background threads run only after `start_worker()` or `on()`.
    """

    _redis: redis_py.Redis | RedisCluster

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str | None = None,
        redis: redis_py.Redis | RedisCluster | None = None,
        subscriber: redis_py.Redis | RedisCluster | None = None,
        ttl: float | None = None,
        heartbeat: float | None = None,
        max_recoveries: int | None = None,
        settings: Settings | None = None,
        cluster: bool = False,
        sentinels: Iterable[tuple[str, int]] | None = None,
        service_name: str | None = None,
    ) -> None:
        super().__init__(
            url,
            settings,
            prefix=prefix,
            ttl=ttl,
            heartbeat=heartbeat,
            max_recoveries=max_recoveries,
            redis=redis,
            subscriber=subscriber,
            cluster=cluster,
            sentinels=sentinels,
            service_name=service_name,
            asynchronous=False,
        )
        self._pubsub: PubSub | ClusterSubscriber | None = None
        self._pubsub_guard = PubSubGuard()  # every use of _pubsub, from any thread
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()  # creating the listener
        self._start_lock = threading.Lock()
        self._executor = SyncExecutor(
            self._redis, self.settings, self._subscribe, self._core.notifications.add_waiter
        )
        # What worqr's command line uses of this client; not API.
        self.internals = SyncInternals(self)

    # -- driving plans ---------------------------------------------------------

    def _drive(self, plan: Plan[T], deadline: float | None = None) -> T:
        return self._executor.drive(plan, deadline)

    def _execute(self, request: Request, deadline: float) -> Any:
        return self._executor.execute(request, deadline)

    def _subscribe(self, request: Subscribe) -> None:
        self._pubsub_guard.apply(self._ensure_listener(), request)

    # -- background loops --------------------------------------------------------

    def _spawn(self, name: str, target: Any) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _start_heartbeat(self) -> None:
        self._spawn("worqr-heartbeat", self._heartbeat_loop)

    def _heartbeat_loop(self) -> None:
        hooks = self._core.state.hooks
        outage = OutageLog("heartbeat", hooks)
        interval = self.settings.heartbeat
        while not self._stopping.wait(outage.backoff() if outage.since else interval):
            try:
                self._drive(self._core.liveness.heartbeat(), deadline=0)
                outage.ok()
            except Exception as error:
                hooks.on_heartbeat_failed(type(error).__name__)
                outage.failed(error)

    def _ensure_listener(self) -> PubSub | ClusterSubscriber:
        with self._lock:
            if self._pubsub is None:
                if self._cluster:
                    self._pubsub = ClusterSubscriber(
                        self._subscriber or self._redis,
                        subscriber_options(self.settings),
                        sharded=self._core.state.sharded,
                    )
                else:
                    if self._subscriber is None:
                        self._subscriber = subscriber_client(
                            self._url, self.settings, asynchronous=False, sentinel=self._sentinel
                        )
                    self._pubsub = self._subscriber.pubsub()
                self._pubsub_guard.start()
                self._spawn("worqr-listener", self._listen_loop)
            return self._pubsub

    def _listen_loop(self) -> None:
        pubsub = self._pubsub
        assert pubsub is not None
        guard = self._pubsub_guard
        outage = OutageLog("listener", self._core.state.hooks)
        next_poll = time.monotonic() + self.settings.poll_interval
        while not self._stopping.is_set():
            wait = min(0.25, max(0.0, next_poll - time.monotonic()))
            try:
                if isinstance(pubsub, ClusterSubscriber):  # its own readers and queue
                    message = pubsub.get_message(timeout=wait)
                else:
                    message = guard.next_message(pubsub, wait)
                outage.ok()
            except Exception as error:
                outage.failed(error)
                guard.sleep(outage.backoff())  # close() wakes it
                continue
            events = self._core.notifications.parse_message(message) if message else []
            if time.monotonic() >= next_poll:
                events += self._core.notifications.poll_events()
                next_poll = time.monotonic() + self.settings.poll_interval
            for queue, event, payload in events:
                for callback in self._core.notifications.listeners(queue):
                    try:
                        callback(event, payload)
                    except Exception:
                        logger.exception("listener of queue %r failed on %r", queue, event)

    # -- closing ---------------------------------------------------------------

    def close(self) -> None:
        """Leave the mesh (processes go back to the front) and close connections."""
        try:
            if self._core.state.worker_id is not None:
                self._drive(self._core.membership.deregister())
        finally:
            self._stopping.set()
            self._pubsub_guard.wake()
            for thread in self._threads:
                if thread is not threading.current_thread():
                    thread.join(timeout=5)
            self._pubsub_guard.close(self._pubsub)
            if self._own_subscriber and self._subscriber is not None:
                self._subscriber.close()
            if self._own_redis:
                self._redis.close()

    def __enter__(self) -> Worqr:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
