"""`AsyncWorqr`: the asyncio client. Executes the same plans as `Worqr`; asyncio
tasks, owned and awaited by the client, run the heartbeat and the listener."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Coroutine, Iterable
from types import TracebackType
from typing import Any, NamedTuple, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import RedisCluster

from .._core.calls import Plan, Request, Subscribe
from .._settings import Settings
from .async_api import AsyncApi
from .async_exec import AsyncExecutor
from .async_job_api import AsyncInternals
from .async_seams import honour_cancel
from .async_shards import AsyncClusterSubscriber
from .connect import subscriber_client, subscriber_options, sync_twin
from .lease import AsyncLease, LoopWatch
from .outage import OutageLog
from .pubsub_guard import AsyncPubSubGuard

T = TypeVar("T")
logger = logging.getLogger("worqr")
LISTEN_SLICE = 1.0  # s an idle listener reads before it looks at the fallback poll again


class ClientProgress(NamedTuple):
    """What a client's health probes read (`AsyncWorqr._progress`)."""

    since_heartbeat: float | None  # seconds since the last heartbeat landed (None: none yet)
    loop_blocked: float  # seconds the loop has not answered the lease thread (0: it has)
    culprit: str  # what was running on the loop meanwhile
    loop_last_ran: float | None  # when the loop last ran, while it is unanswered (None: it answers)
    listening: bool  # the pub/sub listener runs (False before the first subscribe)


class AsyncWorqr(AsyncApi):
    """The asyncio twin of `Worqr`: same methods, awaited. Use ``async with``
    or call `aclose()`."""

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str | None = None,
        redis: aioredis.Redis | RedisCluster | None = None,
        subscriber: aioredis.Redis | RedisCluster | None = None,
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
            asynchronous=True,
        )
        self._pubsub: PubSub | AsyncClusterSubscriber | None = None
        self._pubsub_guard = AsyncPubSubGuard()  # every use of _pubsub, from any task
        self._tasks: list[asyncio.Task[None]] = []
        self._start_lock = asyncio.Lock()
        self._closing = False  # ends a loop whose own callback called aclose()
        self._lease: AsyncLease | None = None
        self._executor = AsyncExecutor(
            self._redis,
            self.settings,
            self._subscribe,
            self._core.notifications.add_waiter,
            self._command_timeout,
        )
        # What worqr's worker runtime and HTTP API use of this client; not API.
        self.internals = AsyncWorqrInternals(self)

    # -- driving plans ---------------------------------------------------------

    def _drive(self, plan: Plan[T], deadline: float | None = None) -> Coroutine[Any, Any, T]:
        return self._executor.drive(plan, deadline)

    def _execute(self, request: Request, deadline: float) -> Coroutine[Any, Any, Any]:
        return self._executor.execute(request, deadline)

    def _execute_once(self, request: Request) -> Coroutine[Any, Any, Any]:
        return self._executor._execute_once(request)

    async def _subscribe(self, request: Subscribe) -> None:
        await self._pubsub_guard.apply(self._ensure_listener(), request)

    # -- background loops --------------------------------------------------------

    def _spawn(self, loop: Any, name: str) -> None:
        self._tasks.append(asyncio.create_task(loop, name=name))

    def _sync_twin(self) -> Any:
        """A sync command client reaching what this client reaches (`sync_twin`),
        or None when a client passed in cannot be copied."""
        return sync_twin(
            self._url,
            self.settings,
            cluster=self._cluster,
            sentinel=self._sentinel,
            passed_in=None if self._own_redis else self._redis,
        )

    def _start_heartbeat(self) -> None:
        """The lease thread, and the task that takes over what it leaves to the
        loop (`lease`); the heartbeat runs on the loop only when a client passed
        in cannot be copied for the thread."""
        twin = self._sync_twin()
        if twin is None:
            logger.warning(
                "the lease is renewed on the event loop (the redis client passed in cannot "
                "be copied for the lease thread): a loop blocked for longer than the ttl "
                "gets this worker failed by its peers"
            )
            self._spawn(self._heartbeat_loop(), "worqr-heartbeat")
            return
        self._lease = AsyncLease(self._core, twin, lambda plan: self._drive(plan, deadline=0))
        self._spawn(self._lease.follow(), "worqr-lease")
        self._lease.start(asyncio.get_running_loop())

    async def _heartbeat_loop(self) -> None:
        hooks = self._core.state.hooks
        outage = OutageLog("heartbeat", hooks)
        while not self._closing:
            await asyncio.sleep(outage.backoff() if outage.since else self.settings.heartbeat)
            try:
                await self._drive(self._core.liveness.heartbeat(), deadline=0)
                outage.ok()
            except Exception as error:
                hooks.on_heartbeat_failed(type(error).__name__)
                outage.failed(error)

    def _ensure_listener(self) -> PubSub | AsyncClusterSubscriber:
        if self._pubsub is None:
            if self._cluster:
                self._pubsub = AsyncClusterSubscriber(
                    self._subscriber or self._redis,
                    subscriber_options(self.settings, asynchronous=True),
                    sharded=self._core.state.sharded,
                )
            else:
                if self._subscriber is None:
                    self._subscriber = subscriber_client(
                        self._url, self.settings, asynchronous=True, sentinel=self._sentinel
                    )
                self._pubsub = self._subscriber.pubsub()
            self._spawn(self._listen_loop(), "worqr-listener")
        return self._pubsub

    async def _listen_loop(self) -> None:
        pubsub = self._pubsub
        assert pubsub is not None
        guard = self._pubsub_guard
        outage = OutageLog("listener", self._core.state.hooks)
        next_poll = time.monotonic() + self.settings.poll_interval
        while not self._closing:
            wait = min(LISTEN_SLICE, max(0.0, next_poll - time.monotonic()))
            try:
                if pubsub.subscribed:
                    async with guard.lock:  # a subscription change cuts the read short
                        message = await honour_cancel(guard.read(pubsub, wait))
                else:
                    message = None
                    await guard.sleep(wait)
                outage.ok()
            except Exception as error:
                outage.failed(error)
                await guard.sleep(outage.backoff())
                continue
            events = self._core.notifications.parse_message(message) if message else []
            if time.monotonic() >= next_poll:
                events += self._core.notifications.poll_events()
                next_poll = time.monotonic() + self.settings.poll_interval
            for queue, event, payload in events:
                for callback in self._core.notifications.listeners(queue):
                    try:
                        result = callback(event, payload)
                        if inspect.isawaitable(result):
                            await result
                    except Exception:
                        logger.exception("listener of queue %r failed on %r", queue, event)
            if events:
                # Let what the callbacks woke (a worker's dequeue) go first: arming
                # the next read costs as much again and adds to enqueue-to-start.
                await asyncio.sleep(0)

    def _progress(self, now: float) -> ClientProgress:
        """For the health probes, from any thread: reads, never waits. The loop
        is watched by the lease thread (without one, a blocked loop shows as
        heartbeats that stop landing)."""
        last = self._core.state.last_heartbeat
        lease = self._lease
        watch = LoopWatch(0.0, "", None) if lease is None else lease.blocked(now)
        listener = next((t for t in list(self._tasks) if t.get_name() == "worqr-listener"), None)
        return ClientProgress(
            since_heartbeat=None if last == 0.0 else now - last,
            loop_blocked=watch.blocked,
            culprit=watch.culprit,
            loop_last_ran=watch.last_ran,
            listening=listener is not None and not listener.done(),
        )

    # -- closing ---------------------------------------------------------------

    async def aclose(self) -> None:
        """Leave the mesh (processes go back to the front) and close connections."""
        try:
            if self._core.state.worker_id is not None:
                await self._drive(self._core.membership.deregister())
        finally:
            self._closing = True
            if self._lease is not None:
                self._lease.stop()
            current = asyncio.current_task()
            others = [task for task in self._tasks if task is not current]
            for task in others:
                task.cancel()
            try:
                if others:
                    # wait() swallows nothing: a cancel aimed at aclose() itself propagates.
                    await asyncio.wait(others)
            finally:
                if self._pubsub is not None:
                    async with self._pubsub_guard.lock:
                        await self._pubsub.aclose()
                if self._own_subscriber and self._subscriber is not None:
                    await self._subscriber.aclose()
                if self._own_redis:
                    await self._redis.aclose()
                if self._lease is not None:
                    lease, self._lease = self._lease, None
                    await lease.close()

    async def __aenter__(self) -> AsyncWorqr:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class AsyncWorqrInternals(AsyncInternals):
    """`AsyncInternals`, and what the lanes of an all-sync worker need of the
    loop's client: a sync twin of its connection, and one call on the loop."""

    def __init__(self, client: AsyncWorqr) -> None:
        super().__init__(client)
        self._client = client

    def sync_twin(self) -> Any:
        """A sync command client reaching what this client reaches, or None
        when a client passed in cannot be copied."""
        return self._client._sync_twin()

    def execute_once(self, request: Request) -> Coroutine[Any, Any, Any]:
        """Run ``request`` once on the client's own connection (never resent)."""
        return self._client._execute_once(request)

    def progress(self, now: float) -> ClientProgress:
        """What the health probes read of the client, from any thread: reads, never waits."""
        return self._client._progress(now)
