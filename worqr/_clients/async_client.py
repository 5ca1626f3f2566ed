"""`AsyncWorqr`: the asyncio client. Executes the same plans as `Worqr`; asyncio
tasks, owned and awaited by the client, run the heartbeat and the listener."""

from __future__ import annotations

import asyncio
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
from tenacity import AsyncRetrying

from .._core.calls import Pinned, Plan, Request, Subscribe, may_resend
from .._core.core import Callback
from .._core.failures import OutageLog, final_error, tenacity_options
from .._core.lua import digest, source
from .._core.pinned import Refresh, cluster_route, commands, target
from .._process import Process
from .._settings import Settings
from .async_shards import AsyncClusterSubscriber
from .connect import subscriber_client, subscriber_options
from .pubsub_guard import AsyncPubSubGuard
from .shell import Shell

T = TypeVar("T")
logger = logging.getLogger("worqr")


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


class AsyncWorqr(Shell):
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

    # -- producing -------------------------------------------------------------

    async def enqueue(self, queue: str, task: str | bytes) -> None:
        await self._drive(self._core.enqueue_many(queue, [task]))

    async def enqueue_many(self, queue: str, tasks: Iterable[str | bytes]) -> int:
        return await self._drive(self._core.enqueue_many(queue, tasks))

    async def cancel_tasks(self, queue: str, task: str | bytes) -> int:
        return await self._drive(self._core.cancel_tasks(queue, task))

    async def delete_queue(self, queue: str) -> None:
        await self._drive(self._core.delete_queue(queue))

    # -- reading ---------------------------------------------------------------

    async def get_queues(self) -> list[str]:
        return await self._drive(self._core.get_queues())

    async def get_workers(self) -> list[str]:
        return await self._drive(self._core.get_workers())

    async def get_working_queues(self, worker_id: str | None = None) -> list[str]:
        return await self._drive(self._core.get_working_queues(worker_id))

    async def get_worker_info(self, worker_id: str) -> dict[str, str]:
        return await self._drive(self._core.get_worker_info(worker_id))

    async def count_tasks(self, queue: str) -> int:
        return await self._drive(self._core.count_tasks(queue))

    async def count_processes(self, queue: str) -> int:
        return await self._drive(self._core.count_processes(queue))

    async def count_failed(self, queue: str) -> int:
        return await self._drive(self._core.count_failed(queue))

    async def get_failed(self, queue: str) -> list[str | bytes]:
        return await self._drive(self._core.get_failed(queue))

    async def get_stats(self, queue: str) -> dict[str, int]:
        return await self._drive(self._core.get_stats(queue))

    async def workers_alive(self, worker_ids: Iterable[str]) -> list[bool]:
        return await self._drive(self._core.workers_alive(worker_ids))

    async def count_worker_processes(self, queue: str, worker_id: str) -> int:
        return await self._drive(self._core.count_worker_processes(queue, worker_id))

    async def requeue_failed(self, queue: str) -> int:
        return await self._drive(self._core.requeue_failed(queue))

    async def purge_failed(self, queue: str) -> int:
        return await self._drive(self._core.purge_failed(queue))

    # -- working ---------------------------------------------------------------

    async def start_worker(self) -> str:
        async with self._start_lock:
            if self._core.worker_id is not None:
                return self._core.worker_id
            worker = await self._drive(self._core.start_worker())
            self._spawn(self._heartbeat_loop(), "worqr-heartbeat")
            return worker

    async def start_work(self, queue: str) -> None:
        await self._drive(self._core.start_work(queue))

    async def stop_work(self, queue: str) -> None:
        await self._drive(self._core.stop_work(queue))

    async def on(self, queue: str, callback: Callback) -> None:
        """``callback(event, message)``; it may be a coroutine function."""
        await self._drive(self._core.on(queue, callback))

    async def dequeue(self, queue: str) -> Process | None:
        taken = await self._drive(self._core.dequeue(queue, 1))
        return taken[0] if taken else None

    async def dequeue_many(self, queue: str, count: int) -> list[Process]:
        return await self._drive(self._core.dequeue(queue, count))

    async def finish_process(self, process: str | Process) -> bool:
        return await self._drive(self._core.finish_process(process))

    async def complete(
        self, queue: str, finished: Iterable[str | Process], count: int = 0
    ) -> tuple[list[bool], list[Process]]:
        """Finish processes of ``queue`` and take up to ``count`` more tasks from its
        front, in one script call. Returns a flag per finished process (False: it no
        longer existed, as `finish_process`) and the new processes."""
        return await self._drive(self._core.complete(queue, finished, count))

    async def stop_process(self, process: str | Process) -> bool:
        return await self._drive(self._core.stop_process(process))

    async def fail_process(self, process: str | Process) -> bool:
        """Dead-letter a process whose task failed; False if it no longer exists."""
        return await self._drive(self._core.fail_process(process))

    async def processes_exist(self, queue: str, pids: Iterable[str]) -> list[bool]:
        """Whether each process still exists (not finished, cancelled or failed over)."""
        return await self._drive(self._core.processes_exist(queue, pids))

    async def configure_queue(self, queue: str, *, max_recoveries: int | None) -> None:
        """Per-queue options shared by the mesh; max_recoveries=-1: never dead-letter."""
        await self._drive(self._core.configure_queue(queue, max_recoveries=max_recoveries))

    async def fail_worker(self) -> int:
        return await self._drive(self._core.fail_worker())

    async def reconcile(self) -> int:
        """Return to the front the processes Redis says this worker holds but this
        client no longer runs (acknowledgements Redis lost, e.g. in a failover);
        heartbeats do it after an outage. Returns how many."""
        return await self._drive(self._core.reconcile())

    async def reap(self) -> int:
        return await self._drive(self._core.reap())

    async def heartbeat(self) -> str:
        return await self._drive(self._core.heartbeat(), deadline=0)

    # -- background loops --------------------------------------------------------

    def _spawn(self, loop: Any, name: str) -> None:
        self._tasks.append(asyncio.create_task(loop, name=name))

    async def _heartbeat_loop(self) -> None:
        outage = OutageLog("heartbeat", self._core.emit)
        while not self._closing:
            await asyncio.sleep(outage.backoff() if outage.since else self.settings.heartbeat)
            try:
                await self._drive(self._core.heartbeat(), deadline=0)
                outage.ok()
            except Exception as error:
                self._core.emit("heartbeat_failed", error=type(error).__name__)
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
        outage = OutageLog("listener", self._core.emit)
        next_poll = time.monotonic() + self.settings.poll_interval
        while not self._closing:
            wait = min(0.25, max(0.0, next_poll - time.monotonic()))
            try:
                if pubsub.subscribed:
                    async with guard.lock:  # short reads: a subscription change waits one
                        read = pubsub.get_message(timeout=min(wait, guard.SLICE))
                        message = await honour_cancel(read)
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
        try:
            if self._core.worker_id is not None:
                await self._drive(self._core.deregister())
        finally:
            self._closing = True
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

    async def __aenter__(self) -> AsyncWorqr:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
