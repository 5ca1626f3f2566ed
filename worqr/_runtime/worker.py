"""`Worker`: runs handlers for queues as one member of the mesh.

One asyncio loop per worker: an `AsyncWorqr` client (heartbeat, peer
supervision, one pub/sub connection), one puller task per queue that dequeues up
to the free capacity when woken, a watcher that stops handlers whose process
vanished, a fence that stops every handler when the lease goes stale, and one
task per running process. Async handlers run on the loop;
sync handlers in a bounded thread pool. The outcome policy is in `_running`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from asyncio import Future
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any, TypeVar

from .._clients.async_client import AsyncWorqr
from .._clients.sentinel import sentinel_target
from .._core.core import Observer
from .._core.failures import OutageLog
from .._errors import LeaseLostError, WorqrError
from .._hooks import WorkerHooks
from .._keys import validate_name
from .._process import Process
from .._settings import with_overrides
from .acks import Ack, AckBatcher
from .capacity import Capacity
from .context import ProcessContext
from .lifecycle import Lifecycle
from .running import Handler, HandlerSpec, Outcome, Reason, Running, is_async_handler, launch
from .settings import WorkerSettings
from .threads import HandlerThreads

logger = logging.getLogger("worqr.worker")

H = TypeVar("H", bound=Handler)
PAYLOAD_LOG_CHARS = 200  # a failure log never carries a whole (maybe huge) payload


class Worker(Lifecycle):
    """A mesh member that runs handlers.

    Outcome policy (what a handler's end does to its process):

    - returns: the process is finished;
    - raises `worqr.Retry`: the task goes back to the front of its queue;
    - raises anything else (or its asyncio task is cancelled by something other
      than the worker, or a sync handler returns an awaitable): the traceback is
      logged without the payload (unless ``log_payloads``) and the task goes to
      the queue's failed list;
    - its process was cancelled (by payload, by deleting the queue, or it vanished
      from Redis): the handler is cancelled (async) or sees
      ``current_process().cancelled`` (sync); nothing is requeued;
    - the worker lost its lease: the handler is stopped the same way and the
      process is left alone, since a peer owns the task now;
    - no heartbeat landed for two thirds of the TTL (Redis unreachable, a
      partition): every handler is stopped the same way before the lease can
      expire and peers take its task (self-fencing); the task goes back to the
      front once Redis answers, unless a peer has it by then;
    - the worker shuts down: handlers get ``grace_period`` seconds (persistent
      ones are asked to stop at once), the rest are stopped, and deregistering
      returns their tasks to the front, oldest first.

    A handler that ended before it was asked to stop keeps its own outcome. An
    acknowledgement Redis refuses (the process is no longer ours) changes nothing
    and is reported to the hooks as ``on_fenced``; one that fails because Redis is
    away is retried until it lands or is refused.

    ``cluster=True``: ``url`` names a node of a Redis Cluster (docs/cluster.md).
    """

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
        cluster: bool = False,
        sentinels: Iterable[tuple[str, int]] | None = None,
        service_name: str | None = None,
    ) -> None:
        super().__init__()
        # Checked now (a bad address fails here, not when the worker runs).
        sentinel_target(url, sentinels, service_name)
        self._sentinels = None if sentinels is None else list(sentinels)
        self._service_name = service_name
        base = settings or WorkerSettings()
        client = with_overrides(base.client, prefix=prefix)
        self.settings = with_overrides(base, client=client, concurrency=concurrency)
        if not isinstance(cluster, bool):
            raise TypeError(f"cluster must be True or False, not {type(cluster).__name__}")
        self.url = url
        self.cluster = cluster
        self._redis = redis
        self._subscriber = subscriber
        self._hooks: list[WorkerHooks] = list(hooks)
        self._observers: list[Observer] = []
        self._specs: dict[str, HandlerSpec] = {}
        self._running: dict[str, Running] = {}
        self._wanted: dict[str, asyncio.Event] = {}
        self._capacity = Capacity((), concurrency=1, limits={})
        self._configured: set[str] = set()  # persistent queues set to never dead-letter
        self._lost_ids: set[str] = set()  # our former worker ids (their processes are peers')
        self._acks = OutageLog("acknowledge")
        self._batch = AckBatcher()  # finishes waiting for their queue's next call
        self._client: AsyncWorqr | None = None
        self._executor: HandlerThreads | None = None

    # -- configuration ---------------------------------------------------------

    def handler(self, queue: str, *, persistent: bool = False) -> Callable[[H], H]:
        """Register the function that runs the tasks of ``queue``: sync (run in the
        thread pool) or async. It takes the task (str, or bytes if not UTF-8)."""
        validate_name(queue)
        if queue in self._specs:
            raise ValueError(f"queue {queue!r} already has a handler")

        def register(function: H) -> H:
            if not callable(function):
                raise TypeError("a handler must be callable")
            if self._loop is not None:
                raise WorqrError("register handlers before the worker runs")
            spec = HandlerSpec(queue, function, persistent, is_async_handler(function))
            self._specs[queue] = spec
            return function

        return register

    def configure(self, **changes: Any) -> None:
        """Replace settings before `run()`: WorkerSettings fields, or ``url``,
        ``cluster``, ``prefix`` and the client's Settings fields (used by the
        command line)."""
        if self._loop is not None:
            raise WorqrError("configure() must be called before the worker runs")
        if "url" in changes:
            self.url = changes.pop("url")
            if self.url is not None:  # the command line's URL replaces sentinels=...
                self._sentinels = self._service_name = None
        if "cluster" in changes:
            cluster = changes.pop("cluster")
            if not isinstance(cluster, bool):
                raise TypeError(f"cluster must be True or False, not {type(cluster).__name__}")
            self.cluster = cluster
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
    def persistent_queues(self) -> list[str]:
        return sorted(queue for queue, spec in self._specs.items() if spec.persistent)

    @property
    def worker_id(self) -> str | None:
        return None if self._client is None else self._client.worker_id

    @property
    def in_flight(self) -> int:
        return len(self._running)

    # -- one run (called by Lifecycle.run_async) ---------------------------------

    def _prepare(self) -> AsyncWorqr:
        if not self._specs:
            raise WorqrError("no handlers: register one with @worker.handler(queue)")
        settings = self.settings
        unknown = sorted(set(settings.queue_limits) - set(self._specs))
        if unknown:
            logger.warning("queue_limits name queues without a handler: %s", unknown)
        persistent = self.persistent_queues
        self._capacity = Capacity(
            list(self._specs),
            concurrency=settings.concurrency,
            limits=settings.queue_limits,
            persistent=persistent,
            batch=settings.batch,
        )
        self._wanted = {queue: asyncio.Event() for queue in self._specs}
        self._configured.clear()
        # Persistent sync handlers hold their thread for good: give them their own.
        threads = settings.concurrency + sum(
            settings.queue_limits.get(q, settings.concurrency)
            for q in persistent
            if not self._specs[q].is_async
        )
        self._batch = AckBatcher()
        self._executor = HandlerThreads(asyncio.get_running_loop(), threads, "worqr-handler")
        client = AsyncWorqr(
            self.url,
            settings=settings.client,
            redis=self._redis,
            subscriber=self._subscriber,
            cluster=self.cluster,
            sentinels=self._sentinels,
            service_name=self._service_name,
        )
        for observer in self._observers:
            client.add_observer(observer)
        client.add_lease_lost_hook(self._on_lease_lost)
        self._client = client
        return client

    def _join_steps(self, client: AsyncWorqr) -> list[Callable[[], Awaitable[Any]]]:
        steps: list[Callable[[], Awaitable[Any]]] = [client.start_worker]
        for queue in self._specs:
            steps.append(partial(client.on, queue, self._listener(queue)))
            steps.append(partial(client.start_work, queue))
        return steps

    def _loops(self, client: AsyncWorqr) -> list[asyncio.Task[None]]:
        pullers = [
            asyncio.create_task(self._pull(client, queue), name=f"worqr-pull-{queue}")
            for queue in self._specs
        ]
        fence = asyncio.create_task(self._fence(client), name="worqr-fence")
        return [*pullers, fence, asyncio.create_task(self._watch(client), name="worqr-watch")]

    # -- taking work -------------------------------------------------------------

    def _listener(self, queue: str) -> Callable[[str, Any], None]:
        def listen(event: str, message: Any) -> None:
            if event == "work":
                self._notify(lambda h: h.on_wakeup(queue))
                self._wanted[queue].set()
            elif event == "cancel":
                for pid in message:
                    self._stop_handler(pid, "cancel")
            elif event == "delete":
                for running in list(self._running.values()):
                    if running.process.queue == queue:
                        self._stop_handler(running.process.id, "cancel")
                self._configured.discard(queue)  # the queue's options went with it
                self._wanted[queue].set()  # rejoin the (now empty) queue

        return listen

    async def _pull(self, client: AsyncWorqr, queue: str) -> None:
        wanted = self._wanted[queue]
        outage = OutageLog(f"dequeue from {queue!r}")
        try:
            while not self._stopping:
                await wanted.wait()
                if self._batch.pending(queue):
                    # One loop turn first: handlers that ended together then share
                    # this call instead of one each. A pub/sub wake-up of an idle
                    # worker has nothing to wait for: it dequeues at once.
                    await asyncio.sleep(0)
                wanted.clear()
                await self._fill(client, queue, outage)
        finally:
            self._batch.give_up_queue(queue)  # their handlers' tasks acknowledge alone

    async def _fill(self, client: AsyncWorqr, queue: str, outage: OutageLog) -> None:
        """Dequeue until the queue runs short or no slot is free; each dequeue also
        finishes the processes waiting on this queue, in the same script call."""
        capacity, fence_wait = self._capacity, self.settings.client.heartbeat / 4
        while not self._stopping:
            if not client.lease_fresh():
                self._flush(client, queue)  # finishes still go out: the work was ours
                await asyncio.sleep(fence_wait)  # self-fenced until a heartbeat lands
                continue
            asked = capacity.reserve(queue)
            if asked == 0:
                self._flush(client, queue)  # no slot to fill: the finishes go alone
                return  # a process ending wakes this queue again
            acks = self._batch.take(queue)
            try:
                processes = await self._take(client, queue, asked, acks)
            except asyncio.CancelledError:
                capacity.abandon(queue, asked)
                self._batch.give_up(acks)
                raise
            except LeaseLostError:  # the heartbeat re-registers us; try again then
                self._wake(capacity.abandon(queue, asked))
                self._send_acks(client, queue, acks)  # refused whole: resent alone
                await asyncio.sleep(fence_wait)
                continue
            except Exception as error:  # Redis away (or a bug): never give up the queue
                self._wake(capacity.abandon(queue, asked))
                self._batch.put_back(queue, acks)
                log = self._acks if acks else outage  # an ack that cannot land says so
                log.failed(error)
                await asyncio.sleep(log.backoff())
                continue
            outage.ok()
            if acks:
                self._acks.ok()
            self._wake(capacity.settle(queue, asked, len(processes)))
            self._notify(partial(_dequeued, queue, asked, len(processes)))
            for process in processes:  # no await between settle and start: no over-commit
                self._start(client, process)
            if len(processes) < asked and not self._batch.pending(queue):
                return  # drained: the dequeue put us in the idle set

    def _flush(self, client: AsyncWorqr, queue: str) -> None:
        self._send_acks(client, queue, self._batch.take(queue))

    def _send_acks(self, client: AsyncWorqr, queue: str, acks: list[Ack]) -> None:
        """Finish ``acks`` without a dequeue, in the background: the puller stays
        free to take a slot the moment one opens."""
        if acks:
            task = asyncio.create_task(self._finish_alone(client, queue, acks))
            self._track(task)

    async def _finish_alone(self, client: AsyncWorqr, queue: str, acks: list[Ack]) -> None:
        processes = [process for process, _ in acks]
        try:
            accepted, _ = await self._retrying(
                lambda: client.complete(queue, processes, 0), self._acks
            )
        except asyncio.CancelledError:
            self._batch.give_up(acks)  # their waiters acknowledge on their own
            raise
        except Exception:  # stopping now with Redis away: the waiters try once more
            self._batch.give_up(acks)
            return
        self._batch.resolve(acks, accepted)

    async def _take(
        self, client: AsyncWorqr, queue: str, count: int, acks: list[Ack]
    ) -> list[Process]:
        """Finish ``acks`` and dequeue up to ``count`` tasks in one call."""
        if count and self._specs[queue].persistent and queue not in self._configured:
            await client.configure_queue(queue, max_recoveries=-1)  # owner deaths never poison
            self._configured.add(queue)
        if not acks:
            return await client.dequeue_many(queue, count)
        accepted, processes = await client.complete(queue, [p for p, _ in acks], count)
        self._batch.resolve(acks, accepted)
        return processes

    def _start(self, client: AsyncWorqr, process: Process) -> None:
        if process.worker_id in self._lost_ids:
            # Taken under an id whose lease is gone: the core returns it to the queue.
            self._wake(self._capacity.release(process.queue))
            self._notify(lambda h: h.on_dropped(process.queue))
            return
        assert self._loop is not None and self._executor is not None
        running = Running(process, self._specs[process.queue], ProcessContext(process))
        running.inner = launch(running, self._loop, self._executor)
        self._running[process.id] = running
        self._notify(lambda h: h.on_started(process.queue))
        running.inner.add_done_callback(partial(self._ended, client, running))
        self._track(running.inner)  # a drain waits for the handler

    # -- ending a process --------------------------------------------------------

    def _ended(self, client: AsyncWorqr, running: Running, _: object) -> None:
        """The handler ended. The common case (it returned) needs no task of its
        own: its finish waits for the queue's next call, and a drain waits for it."""
        try:
            if self._running.get(running.process.id) is running and not self._stopping:
                outcome, _error = running.outcome()
                if outcome is Outcome.FINISHED:
                    self._finish_later(client, running)
                    return
        except Exception:  # never leave a process without an outcome
            logger.exception("settling process %s failed", running.process.id)
        self._track(asyncio.create_task(self._run(client, running)))

    async def _run(self, client: AsyncWorqr, running: Running) -> None:
        try:
            await self._settle(client, running)
        finally:
            self._end(running)

    def _finish_later(self, client: AsyncWorqr, running: Running) -> None:
        """Finish with the queue's next call (with the next dequeue, in one script
        call); its slot is free already, so that call can refill it."""
        process, seconds = running.process, running.seconds()
        waiter = self._batch.add(process)
        self._end(running)
        self._wanted[process.queue].set()
        waiter.add_done_callback(partial(self._acked, client, process, seconds))
        self._track(waiter)  # a drain waits for it (it ends when the puller stops)

    def _acked(
        self, client: AsyncWorqr, process: Process, seconds: float, waiter: Future[bool | None]
    ) -> None:
        if waiter.cancelled():
            return  # cancelled by the last step of a shutdown, as its process task was
        ok = waiter.result()
        if ok is None:  # the puller stopped before learning the result: ack alone
            self._track(asyncio.create_task(self._finish_alone_one(client, process, seconds)))
        else:
            self._finished(process.queue, seconds, ok)

    async def _finish_alone_one(self, client: AsyncWorqr, process: Process, seconds: float) -> None:
        self._finished(process.queue, seconds, await self._ack(client.finish_process, process))

    def _finished(self, queue: str, seconds: float, ok: bool) -> None:
        self._notify(lambda h: h.on_finished(queue, seconds) if ok else h.on_fenced(queue))

    def _end(self, running: Running) -> None:
        if self._running.get(running.process.id) is not running:
            return
        del self._running[running.process.id]
        self._wake(self._capacity.release(running.process.queue))

    def _wake(self, queues: list[str]) -> None:
        if not self._stopping:
            for queue in queues:
                self._wanted[queue].set()

    async def _settle(self, client: AsyncWorqr, running: Running) -> None:
        """Acknowledge the outcome of a process whose handler ended."""
        process, queue = running.process, running.process.queue
        if self._running.get(process.id) is not running:
            return  # a shutdown that ran out of time already gave its task back
        outcome, error = running.outcome()
        seconds = running.seconds()
        if outcome is Outcome.LEASE_LOST:
            self._notify(lambda h: h.on_fenced(queue))
        elif outcome is Outcome.SHUTDOWN:
            self._notify(lambda h: h.on_retried(queue))  # deregistering returns it
        elif outcome is Outcome.CANCELLED:
            # The process is gone already; the ack clears our records of it. A stop,
            # not a finish: were it somehow still there, it would be requeued, not lost.
            await self._ack(client.stop_process, process)
            self._notify(lambda h: h.on_cancelled(queue))
        elif outcome is Outcome.RETRIED:
            ok = await self._ack(client.stop_process, process)
            self._notify(lambda h: h.on_retried(queue) if ok else h.on_fenced(queue))
        elif outcome is Outcome.FAILED:
            self._log_failure(process, error)
            ok = await self._ack(client.fail_process, process)
            self._notify(lambda h: h.on_failed(queue, seconds) if ok else h.on_fenced(queue))
        else:  # while stopping (otherwise `_finish_later`): no puller to carry it
            self._finished(queue, seconds, await self._ack(client.finish_process, process))

    def _log_failure(self, process: Process, error: BaseException | None) -> None:
        payload = ""
        if self.settings.log_payloads:
            payload = f" task={process.task!r:.{PAYLOAD_LOG_CHARS}}"
        logger.error(
            "handler of queue %r failed (process %s)%s",
            process.queue,
            process.id,
            payload,
            exc_info=error,
        )

    async def _ack(self, call: Callable[[Process], Awaitable[bool]], process: Process) -> bool:
        """Acknowledge, retrying while Redis is away (acks are safe to resend)."""
        try:
            return bool(await self._retrying(lambda: call(process), self._acks))
        except Exception:
            return False  # stopping now with Redis down: peers will requeue the task

    def _notify(self, event: Callable[[WorkerHooks], object]) -> None:
        for hook in self._hooks:
            try:
                event(hook)
            except Exception:
                logger.exception("worker hook failed")

    # -- stopping handlers -----------------------------------------------------

    def _stop_handler(self, pid: str, reason: Reason) -> None:
        running = self._running.get(pid)
        if running is not None:
            running.stop(reason)

    def _cancel_all(self, reason: Reason, *, persistent_only: bool = False) -> None:
        for running in list(self._running.values()):
            if running.spec.persistent or not persistent_only:
                running.stop(reason)

    def _on_lease_lost(self, old_worker_id: str) -> None:
        # Runs in the heartbeat task, before the core returns the old id's processes.
        self._lost_ids.add(old_worker_id)
        self._notify(lambda h: h.on_lease_lost())
        for running in list(self._running.values()):
            if running.process.worker_id == old_worker_id:
                running.stop("lease")

    async def _fence(self, client: AsyncWorqr) -> None:
        """Self-fencing: a worker whose heartbeats stopped landing stops its
        handlers before its lease can expire, so no task runs here while a peer
        that failed us runs it too."""
        tick = self.settings.client.heartbeat / 4
        while True:
            await asyncio.sleep(tick)
            if self._running and not client.lease_fresh():
                stopped = sum(running.stop("stale") for running in list(self._running.values()))
                if stopped:
                    logger.warning(
                        "no heartbeat landed for %.1f s: stopped %d handlers before peers "
                        "may take their tasks",
                        self.settings.client.ttl * 2 / 3,
                        stopped,
                    )

    async def _watch(self, client: AsyncWorqr) -> None:
        """Pub/sub is a hint: every poll interval, stop handlers whose process
        vanished (cancelled, or failed over to a peer) without us hearing of it."""
        while True:
            await asyncio.sleep(self.settings.client.poll_interval)
            by_queue: dict[str, list[str]] = {}
            for pid, running in self._running.items():
                if running.reason is None:
                    by_queue.setdefault(running.process.queue, []).append(pid)
            for queue, pids in by_queue.items():
                try:
                    exist = await client.processes_exist(queue, pids)
                except Exception as error:  # Redis away: the heartbeat logs the outage
                    logger.debug("process check of %r failed: %s", queue, error)
                    break
                for pid, alive in zip(pids, exist, strict=True):
                    if not alive:
                        self._stop_handler(pid, "cancel")

    def _forget_unfinished(self) -> None:
        """After a shutdown's last wait: deregistering gives these tasks back."""
        stuck = 0
        for running in list(self._running.values()):
            stuck += not running.spec.is_async
            del self._running[running.process.id]
            self._capacity.release(running.process.queue)
            self._notify(partial(_retried, running.process.queue))
        if stuck:
            # Threads cannot be killed: the process exits when these handlers return.
            logger.warning(
                "%d sync handlers ignore current_process().cancelled; their tasks were "
                "returned to their queues, but their threads still run",
                stuck,
            )

    def _shutdown_executor(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None
        self._client = None


def _retried(queue: str, hooks: WorkerHooks) -> None:
    hooks.on_retried(queue)


def _dequeued(queue: str, asked: int, got: int, hooks: WorkerHooks) -> None:
    hooks.on_dequeue(queue, asked, got)
