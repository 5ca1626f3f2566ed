"""`AsyncWorqr`: the asyncio client. Executes the same plans as `Worqr`; asyncio
tasks, owned and awaited by the client, run the heartbeat and the listener."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Iterable
from types import TracebackType
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import PipelineCommand, RedisCluster
from redis.exceptions import NoScriptError
from redis.exceptions import TimeoutError as RedisTimeoutError
from tenacity import AsyncRetrying

from .._core.calls import Call, Listen, Pinned, Plan, Request, Subscribe, Wait, may_resend
from .._core.failures import final_error
from .._core.lua import digest, source
from .._core.pinned import Refresh, cluster_route, commands, target
from .._settings import Settings
from .async_api import AsyncApi
from .async_shards import AsyncClusterSubscriber
from .connect import subscriber_client, subscriber_options, sync_twin
from .lease import AsyncLease
from .outage import OutageLog
from .pubsub_guard import AsyncPubSubGuard
from .resend import tenacity_options

T = TypeVar("T")
logger = logging.getLogger("worqr")
LISTEN_SLICE = 1.0  # s an idle listener reads before it looks at the fallback poll again


async def honour_cancel(call: Awaitable[T]) -> T:
    """Await ``call``, and raise CancelledError if this task was cancelled
    meanwhile even when ``call`` swallowed the cancellation.

    redis-py sends each command under ``asyncio.wait_for``, which on Python 3.11
    returns normally when a cancel arrives as the write completes (cpython
    gh-86296). A loop stopped with ``task.cancel()`` (heartbeat, listener, a
    worker's puller) would then run on and its owner would wait forever.
    """
    task = asyncio.current_task()
    before = task.cancelling() if task is not None else 0
    result = await call
    if task is not None and task.cancelling() > before:
        raise asyncio.CancelledError
    return result


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

    # -- driving plans ---------------------------------------------------------

    async def _drive(self, plan: Plan[T], deadline: float | None = None) -> T:
        limit = self.settings.retry_deadline if deadline is None else deadline
        try:
            request = next(plan)
            while True:
                try:
                    reply = await self._execute(request, limit)
                except Exception as error:  # handed to the plan, which may handle it
                    request = plan.throw(error)
                else:
                    request = plan.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

    async def _execute(self, request: Request, deadline: float) -> Any:
        try:  # the fast path: most calls succeed at once, without a retry loop
            return await self._execute_once(request)
        except Exception as error:
            if deadline <= 0 or not may_resend(request, error):
                raise final_error(request, error) from error
        try:
            async for attempt in AsyncRetrying(**tenacity_options(request, deadline)):
                with attempt:
                    return await self._execute_once(request)
        except Exception as error:
            raise final_error(request, error) from error
        raise AssertionError("unreachable")  # pragma: no cover

    async def _execute_once(self, request: Request) -> Any:
        return await honour_cancel(self._send(request))

    async def _send(self, request: Request) -> Any:
        if isinstance(request, Subscribe):
            await self._pubsub_guard.apply(self._ensure_listener(), request)
            return None
        if isinstance(request, Listen):
            event = asyncio.Event()
            self._core.add_waiter(request.key, event)
            return event
        if isinstance(request, Wait):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(request.waiter.wait(), request.timeout)
            request.waiter.clear()
            return None
        limit = self._command_timeout
        if limit is None:  # redis-py's own socket_timeout bounds each read and write
            return await self._command(request)
        scope = asyncio.timeout(limit)
        try:
            async with scope:
                return await self._command(request)
        except TimeoutError as error:
            if not scope.expired():
                raise
            # redis-py's own words for a reply that did not come: ambiguous, as
            # when its socket_timeout fires (the connection is closed either way).
            raise RedisTimeoutError(f"Timeout reading a reply ({limit:g} s)") from error

    async def _command(self, request: Call | Pinned) -> Any:
        """Run a request that talks to Redis: a command, a script or a pinned group."""
        if isinstance(request, Pinned):
            if isinstance(self._redis, RedisCluster):
                return await self._pinned_on_cluster(self._redis, request)
            async with self._redis.pipeline(transaction=False) as pipe:
                for args in commands(request):
                    pipe.execute_command(*args)
                return await pipe.execute(raise_on_error=False)
        if request.script is None:
            return await self._redis.execute_command(*request.args)
        # EVALSHA straight away; NOSCRIPT loads the script and sends it again (as Worqr).
        keys, redis = request.keys, self._redis
        try:
            return await redis.execute_command(
                "EVALSHA", digest(request.script), len(keys), *keys, *request.args
            )
        except NoScriptError:
            await redis.script_load(source(request.script))
            return await redis.execute_command(
                "EVALSHA", digest(request.script), len(keys), *keys, *request.args
            )

    async def _pinned_on_cluster(self, cluster: RedisCluster, request: Pinned) -> list[Any]:
        await cluster.initialize()  # once; again after redis-py saw a node fail
        route = cluster_route(request)
        try:
            step = next(route)
            while True:
                try:
                    if isinstance(step, Refresh):
                        await cluster.nodes_manager.initialize()
                        reply = None
                    else:  # one connection of the node, as redis-py's own pipeline
                        sent = [PipelineCommand(i, *args) for i, args in enumerate(step.commands)]
                        await target(cluster, step).execute_pipeline(sent)
                        reply = [command.result for command in sent]
                except Exception as error:
                    step = route.throw(error)
                else:
                    step = route.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]

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
        hooks = self._core.hooks
        outage = OutageLog("heartbeat", hooks)
        while not self._closing:
            await asyncio.sleep(outage.backoff() if outage.since else self.settings.heartbeat)
            try:
                await self._drive(self._core.heartbeat(), deadline=0)
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
                    sharded=self._core.sharded,
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
        outage = OutageLog("listener", self._core.hooks)
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
            events = self._core.parse_message(message) if message else []
            if time.monotonic() >= next_poll:
                events += self._core.poll_events()
                next_poll = time.monotonic() + self.settings.poll_interval
            for queue, event, payload in events:
                for callback in self._core.listeners(queue):
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

    # -- closing ---------------------------------------------------------------

    async def aclose(self) -> None:
        """Leave the mesh (processes go back to the front) and close connections."""
        try:
            if self._core.worker_id is not None:
                await self._drive(self._core.deregister())
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
