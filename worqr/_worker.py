"""`Worker`: runs handlers for queues as one member of the mesh.

One asyncio loop per worker: an `AsyncWorqr` client (heartbeat, peer
supervision, one pub/sub connection), one puller task per queue that dequeues up
to the free capacity when woken, and one task per running process. Async
handlers run on the loop; sync handlers in a bounded thread pool.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import logging
import signal
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeVar

from redis.exceptions import RedisError

from ._aclient import AsyncWorqr
from ._context import ProcessContext, Retry, set_current
from ._core import Observer
from ._errors import LeaseLostError, WorqrError
from ._hooks import WorkerHooks
from ._keys import validate_name
from ._process import Process
from ._retry import OutageLog
from ._settings import with_overrides
from ._worker_settings import WorkerSettings

logger = logging.getLogger("worqr.worker")

Handler = Callable[[Any], Any]
H = TypeVar("H", bound=Handler)
Reason = Literal["cancel", "lease", "shutdown"]


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    queue: str
    function: Handler
    persistent: bool
    is_async: bool


@dataclass(slots=True)
class Running:
    """One process in flight: its handler's task and why it was stopped, if it was."""

    process: Process
    spec: HandlerSpec
    context: ProcessContext
    inner: asyncio.Future[Any] | None = None
    reason: Reason | None = None
    started: float = field(default_factory=time.monotonic)


class Worker:
    """A mesh member that runs handlers. See the README for the outcome policy."""

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str | None = None,
        concurrency: int | None = None,
        settings: WorkerSettings | None = None,
        redis: Any = None,
        subscriber: Any = None,
        hooks: Iterable[WorkerHooks] = (),
    ) -> None:
        base = settings or WorkerSettings()
        client = with_overrides(base.client, prefix=prefix)
        self.settings = with_overrides(base, client=client, concurrency=concurrency)
        self.url = url
        self._redis = redis
        self._subscriber = subscriber
        self._hooks: list[WorkerHooks] = list(hooks)
        self._observers: list[Observer] = []
        self._specs: dict[str, HandlerSpec] = {}
        self._running: dict[str, Running] = {}
        self._on_queue: Counter[str] = Counter()  # running processes per queue
        self._busy = 0  # running processes of non-persistent queues
        self._wanted: dict[str, asyncio.Event] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._stop_now: asyncio.Event | None = None
        self._stop_early: bool | None = None  # stop() before the loop ran: now?
        self._process_tasks: set[asyncio.Task[None]] = set()
        self._stopping = False
        self._client: AsyncWorqr | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._started = threading.Event()

    # -- configuration ---------------------------------------------------------

    def handler(self, queue: str, *, persistent: bool = False) -> Callable[[H], H]:
        """Register the function that runs the tasks of ``queue``."""
        validate_name(queue)
        if queue in self._specs:
            raise ValueError(f"queue {queue!r} already has a handler")

        def register(function: H) -> H:
            if not callable(function):
                raise TypeError("a handler must be callable")
            is_async = inspect.iscoroutinefunction(function)
            self._specs[queue] = HandlerSpec(queue, function, persistent, is_async)
            return function

        return register

    def configure(self, **changes: Any) -> None:
        """Replace settings before `run()`: WorkerSettings fields, or ``url``,
        ``prefix`` and the client's Settings fields (used by the command line)."""
        if self._loop is not None:
            raise WorqrError("configure() must be called before the worker runs")
        if "url" in changes:
            self.url = changes.pop("url")
        client_fields = {f.name for f in dataclasses.fields(self.settings.client)}
        client_changes = {k: changes.pop(k) for k in list(changes) if k in client_fields}
        client = with_overrides(self.settings.client, **client_changes)
        self.settings = with_overrides(self.settings, client=client, **changes)

    def add_hooks(self, hooks: WorkerHooks) -> None:
        self._hooks.append(hooks)

    def add_observer(self, observer: Observer) -> None:
        """Receive the client's life events (see `Worqr.add_observer`)."""
        self._observers.append(observer)

    @property
    def queues(self) -> list[str]:
        return sorted(self._specs)

    @property
    def handlers(self) -> dict[str, Handler]:
        return {queue: spec.function for queue, spec in self._specs.items()}

    @property
    def worker_id(self) -> str | None:
        return None if self._client is None else self._client.worker_id

    @property
    def in_flight(self) -> int:
        return len(self._running)

    # -- running ---------------------------------------------------------------

    def run(self) -> None:
        """Run until SIGINT/SIGTERM (graceful; a second signal stops at once) or
        `stop()`."""
        asyncio.run(
            self.run_async(install_signals=threading.current_thread() is threading.main_thread())
        )

    def stop(self, *, now: bool = False) -> None:
        """Ask the worker to stop (thread-safe). ``now`` skips the grace period."""
        loop = self._loop
        if loop is None or loop.is_closed():
            self._stop_early = now or bool(self._stop_early)
            return
        loop.call_soon_threadsafe(self._request_stop, now)

    def wait_started(self, timeout: float | None = None) -> bool:
        """Block until the worker has registered and joined its queues."""
        return self._started.wait(timeout)

    def _request_stop(self, now: bool) -> None:
        assert self._stop_requested is not None and self._stop_now is not None
        if self._stop_requested.is_set() or now:
            self._stop_now.set()
            self._cancel_all("shutdown")
        self._stop_requested.set()

    def _on_signal(self, signum: int) -> None:
        logger.info("received %s: stopping", signal.Signals(signum).name)
        self._request_stop(False)

    async def run_async(self, *, install_signals: bool = False) -> None:
        """Run inside the current event loop until `stop()` (or a signal)."""
        if not self._specs:
            raise WorqrError("no handlers: register one with @worker.handler(queue)")
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        self._stop_now = asyncio.Event()
        self._stopping = False
        if self._stop_early is not None:
            self._request_stop(self._stop_early)
            self._stop_early = None
        self._wanted = {queue: asyncio.Event() for queue in self._specs}
        self._executor = ThreadPoolExecutor(
            max_workers=self.settings.concurrency, thread_name_prefix="worqr-handler"
        )
        client = AsyncWorqr(
            self.url, settings=self.settings.client, redis=self._redis, subscriber=self._subscriber
        )
        self._client = client
        for observer in self._observers:
            client.add_observer(observer)
        client.add_lease_lost_hook(self._on_lease_lost)
        signals = (signal.SIGINT, signal.SIGTERM) if install_signals else ()
        for signum in signals:
            self._loop.add_signal_handler(signum, self._on_signal, signum)
        pullers: list[asyncio.Task[None]] = []
        try:
            if not await self._join(client):
                return  # stopped before Redis ever answered
            pullers = [
                asyncio.create_task(self._pull(client, queue), name=f"worqr-pull-{queue}")
                for queue in self._specs
            ]
            pullers.append(asyncio.create_task(self._check_leases(client), name="worqr-leases"))
            self._started.set()
            await self._stop_requested.wait()
            self._stopping = True
            for task in pullers:
                task.cancel()
            await asyncio.gather(*pullers, return_exceptions=True)
            await self._drain()
        finally:
            self._stopping = True
            for task in pullers:
                task.cancel()
            for signum in signals:
                self._loop.remove_signal_handler(signum)
            await self._close(client)

    async def _join(self, client: AsyncWorqr) -> bool:
        """Register and join every queue; False if a stop came first."""
        steps: list[Callable[[], Awaitable[Any]]] = [client.start_worker]
        for queue, spec in self._specs.items():
            if spec.persistent:
                steps.append(partial(client.configure_queue, queue, max_recoveries=-1))
            steps.append(partial(client.on, queue, self._listener(queue)))
            steps.append(partial(client.start_work, queue))
        assert self._stop_requested is not None
        for step in steps:
            attempt = asyncio.ensure_future(self._retrying(step))
            stop = asyncio.ensure_future(self._stop_requested.wait())
            await asyncio.wait({attempt, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if not attempt.done():
                attempt.cancel()
                await asyncio.gather(attempt, return_exceptions=True)
                return False
            attempt.result()
        return True

    async def _retrying(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``call`` until Redis answers (a worker never dies of an outage)."""
        outage = OutageLog("worker")
        while True:
            try:
                result = await call()
            except (WorqrError, RedisError, OSError) as error:
                if self._stop_now is not None and self._stop_now.is_set():
                    raise
                outage.failed(error)
                await asyncio.sleep(outage.backoff())
            else:
                outage.ok()
                return result

    async def _close(self, client: AsyncWorqr) -> None:
        try:
            await client.aclose()  # hands anything still held back to the front, deregisters
        except (WorqrError, RedisError, OSError) as error:
            logger.warning("could not deregister cleanly (%s); peers will fail this worker", error)
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
            self._client = None
            self._loop = None

    # -- taking work -------------------------------------------------------------

    def _listener(self, queue: str) -> Callable[[str, Any], None]:
        def listen(event: str, message: Any) -> None:
            if event == "work":
                for hook in self._hooks:
                    hook.on_wakeup(queue)
                self._wanted[queue].set()
            elif event == "cancel":
                for pid in message:
                    self._stop_process_handler(pid, "cancel")
            elif event == "delete":
                for running in list(self._running.values()):
                    if running.process.queue == queue:
                        self._stop_process_handler(running.process.id, "cancel")
                self._wanted[queue].set()  # rejoin the (now empty) queue

        return listen

    def _free(self, queue: str) -> int:
        limit = self.settings.queue_limits.get(queue, self.settings.concurrency)
        free = limit - self._on_queue[queue]
        if not self._specs[queue].persistent:
            free = min(free, self.settings.concurrency - self._busy)
        return free

    async def _pull(self, client: AsyncWorqr, queue: str) -> None:
        wanted = self._wanted[queue]
        outage = OutageLog(f"dequeue from {queue!r}")
        heartbeat = self.settings.client.heartbeat
        while not self._stopping:
            await wanted.wait()
            wanted.clear()
            while not self._stopping:
                free = self._free(queue)
                if free <= 0:
                    break  # a process of this worker ending sets `wanted` again
                if not client.lease_fresh():
                    await asyncio.sleep(heartbeat / 4)  # self-fenced until a heartbeat lands
                    continue
                try:
                    processes = await client.dequeue_many(queue, free)
                except LeaseLostError:
                    await asyncio.sleep(heartbeat / 4)
                    continue
                except (WorqrError, RedisError, OSError) as error:
                    outage.failed(error)
                    await asyncio.sleep(outage.backoff())
                    continue
                outage.ok()
                for hook in self._hooks:
                    hook.on_dequeue(queue, free, len(processes))
                for process in processes:
                    self._start(client, process)
                if len(processes) < free:
                    break  # drained: the dequeue put us in the idle set

    def _start(self, client: AsyncWorqr, process: Process) -> None:
        spec = self._specs[process.queue]
        running = Running(process, spec, ProcessContext(process))
        self._running[process.id] = running
        self._on_queue[process.queue] += 1
        self._busy += not spec.persistent
        for hook in self._hooks:
            hook.on_started(process.queue)
        task = asyncio.create_task(self._run(client, running), name=f"worqr-process-{process.id}")
        self._process_tasks.add(task)
        task.add_done_callback(self._process_tasks.discard)

    # -- running a process -----------------------------------------------------

    async def _run(self, client: AsyncWorqr, running: Running) -> None:
        process, spec = running.process, running.spec
        try:
            running.inner = self._launch(running)
            await asyncio.wait({running.inner})
            await self._settle(client, running)
        finally:
            self._forget(running)
            self._wanted[process.queue].set()
            for queue, event in self._wanted.items():
                if queue != process.queue and self._free(queue) > 0 and not spec.persistent:
                    event.set()

    def _forget(self, running: Running) -> None:
        if self._running.get(running.process.id) is running:
            del self._running[running.process.id]
            self._on_queue[running.process.queue] -= 1
            self._busy -= not running.spec.persistent

    def _launch(self, running: Running) -> asyncio.Future[Any]:
        context = contextvars.copy_context()
        context.run(set_current, running.context)
        function, task = running.spec.function, running.process.task
        if running.spec.is_async:
            return asyncio.create_task(function(task), context=context)
        assert self._loop is not None
        return self._loop.run_in_executor(self._executor, context.run, function, task)

    async def _settle(self, client: AsyncWorqr, running: Running) -> None:
        """Acknowledge the outcome of a process whose handler ended."""
        process, queue = running.process, running.process.queue
        if self._running.get(process.id) is not running:
            return  # a stop that ran out of time already returned its task
        inner = running.inner
        assert inner is not None
        seconds = time.monotonic() - running.started
        if running.reason == "lease":
            self._notify(lambda h: h.on_fenced(queue))
            return
        if running.reason == "shutdown":
            # Deregistering returns every unfinished task at once, oldest first.
            self._notify(lambda h: h.on_retried(queue))
            return
        error = None if inner.cancelled() else inner.exception()
        if running.reason == "cancel" or inner.cancelled():
            await self._ack(client.finish_process, process)  # gone already: clears local state
            self._notify(lambda h: h.on_cancelled(queue))
        elif isinstance(error, Retry):
            ok = await self._ack(client.stop_process, process)
            self._notify(lambda h: h.on_retried(queue) if ok else h.on_fenced(queue))
        elif error is not None:
            payload = f" task={process.task!r}" if self.settings.log_payloads else ""
            logger.error(
                "handler of queue %r failed (process %s)%s",
                queue,
                process.id,
                payload,
                exc_info=error,
            )
            ok = await self._ack(client.fail_process, process)
            self._notify(lambda h: h.on_failed(queue, seconds) if ok else h.on_fenced(queue))
        else:
            ok = await self._ack(client.finish_process, process)
            self._notify(lambda h: h.on_finished(queue, seconds) if ok else h.on_fenced(queue))

    async def _ack(self, call: Callable[[Process], Awaitable[bool]], process: Process) -> bool:
        """Acknowledge, retrying while Redis is away (acks are safe to resend)."""
        try:
            return bool(await self._retrying(lambda: call(process)))
        except (WorqrError, RedisError, OSError):
            return False  # stopping now with Redis down: peers will requeue the task

    def _notify(self, event: Callable[[WorkerHooks], object]) -> None:
        for hook in self._hooks:
            try:
                event(hook)
            except Exception:
                logger.exception("worker hook failed")

    # -- stopping handlers -----------------------------------------------------

    def _stop_process_handler(self, pid: str, reason: Reason) -> None:
        running = self._running.get(pid)
        if running is None or running.reason is not None:
            return
        running.reason = reason
        running.context.cancelled.set()
        if running.spec.is_async and running.inner is not None:
            running.inner.cancel()

    def _cancel_all(self, reason: Reason, worker_id: str | None = None) -> None:
        for running in list(self._running.values()):
            if worker_id is None or running.process.worker_id == worker_id:
                self._stop_process_handler(running.process.id, reason)

    def _on_lease_lost(self, old_worker_id: str) -> None:
        # Runs in the heartbeat task: the processes now belong to peers.
        self._notify(lambda h: h.on_lease_lost())
        self._cancel_all("lease", old_worker_id)

    async def _check_leases(self, client: AsyncWorqr) -> None:
        """Pub/sub is a hint: every poll interval, stop handlers whose process
        vanished (cancelled, or failed over to a peer) without us hearing of it."""
        while True:
            await asyncio.sleep(self.settings.client.poll_interval)
            by_queue: dict[str, list[str]] = {}
            for pid, running in self._running.items():
                by_queue.setdefault(running.process.queue, []).append(pid)
            for queue, pids in by_queue.items():
                try:
                    exist = await client.processes_exist(queue, pids)
                except (WorqrError, RedisError, OSError):
                    break  # Redis away: the heartbeat will notice a lost lease
                for pid, alive in zip(pids, exist, strict=True):
                    if not alive:
                        self._stop_process_handler(pid, "cancel")

    async def _drain(self) -> None:
        """Graceful stop: wait for handlers up to the grace period, then stop the
        rest; deregistering puts their tasks back at the front, oldest first."""
        assert self._stop_now is not None
        if self._process_tasks and not self._stop_now.is_set():
            logger.info(
                "waiting up to %.1f s for %d handlers",
                self.settings.grace_period,
                len(self._process_tasks),
            )
            stop_now = asyncio.ensure_future(self._stop_now.wait())
            handlers = asyncio.ensure_future(
                asyncio.wait(set(self._process_tasks), timeout=self.settings.grace_period)
            )
            await asyncio.wait({stop_now, handlers}, return_when=asyncio.FIRST_COMPLETED)
            stop_now.cancel()
            handlers.cancel()
        self._cancel_all("shutdown")
        if self._process_tasks:
            # Async handlers end at once; sync ones that watch `cancelled` soon.
            await asyncio.wait(set(self._process_tasks), timeout=1.0)
        for running in list(self._running.values()):
            # Sync handlers that ignore `cancelled` keep their thread; deregistering
            # returns their tasks anyway (at-least-once: the thread may still finish).
            self._forget(running)
            self._notify(partial(_retried, running.process.queue))


def _retried(queue: str, hooks: WorkerHooks) -> None:
    hooks.on_retried(queue)
