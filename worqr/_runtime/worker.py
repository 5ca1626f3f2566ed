"""`Worker`: runs handlers for queues as one member of the mesh.

One asyncio loop per worker: an `AsyncWorqr` client (heartbeat, peer
supervision, one pub/sub connection), one take loop per queue (`pulling`) that
fills the free slots when woken, the processes in flight (`dispatch`: a task or
a handler thread each, a watcher that stops handlers whose process vanished, a
fence that stops every handler when the lease goes stale), and their
acknowledgements (`acks`). Async handlers run on the loop; sync handlers on
handler threads. The outcome policy is in `running`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from .._checks import flag
from .._clients.async_client import AsyncWorqr
from .._clients.sentinel import sentinel_target
from .._errors import WorqrError
from .._hooks import HookList, Hooks, Observer, ObserverHooks
from .._settings import with_overrides
from .acks import Acknowledger
from .burst import Burst, refuse_persistent
from .capacity import Capacity
from .dispatch import Dispatcher
from .history import HistoryRecorder
from .isolation.pool import ChildPool, PoolSettings
from .isolation.targets import target_of
from .job_outcomes import JobOutcomes
from .lane_setup import make_lanes
from .lanes import Lanes
from .lifecycle import Lifecycle, until_answered
from .pace import HandlerPace
from .progress import PULLER_PREFIX, Watched, WorkerChecks
from .pulling import Puller
from .registry import HandlerRegistry, isolate
from .running import Handler, Reason
from .settings import WorkerSettings
from .threads import HandlerThreads

if TYPE_CHECKING:
    from .probes import ProbeServer

logger = logging.getLogger("worqr.worker")

H = TypeVar("H", bound=Handler)


class Worker(HandlerRegistry, Lifecycle):
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
        isolated: bool | None = None,
        settings: WorkerSettings | None = None,
        redis: Any = None,
        subscriber: Any = None,
        hooks: Iterable[Hooks] = (),
        cluster: bool = False,
        sentinels: Iterable[tuple[str, int]] | None = None,
        service_name: str | None = None,
    ) -> None:
        HandlerRegistry.__init__(self)
        Lifecycle.__init__(self)
        # Checked now (a bad address fails here, not when the worker runs).
        sentinel_target(url, sentinels, service_name)
        self._sentinels = None if sentinels is None else list(sentinels)
        self._service_name = service_name
        base = settings or WorkerSettings()
        client = with_overrides(base.client, prefix=prefix)
        self.settings = with_overrides(
            base, client=client, concurrency=concurrency, isolated=isolated
        )
        flag("cluster", cluster)
        self.url = url
        self.cluster = cluster
        self._redis = redis
        self._subscriber = subscriber
        self._hooks = HookList()
        for each in hooks:
            self._hooks.add(each)
        # The metrics history (docs/history.md): a hook while a run keeps it.
        self._history = HistoryRecorder()
        self._history_task: asyncio.Task[None] | None = None
        self._wanted: dict[str, asyncio.Event] = {}
        self._client: AsyncWorqr | None = None
        self._dispatch: Dispatcher | None = None
        self._puller: Puller | None = None
        self._lanes: Lanes | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}  # queue -> its due-jobs timer
        self._watched: Watched | None = None  # what the health probes read during a run
        self._probes: ProbeServer | None = None
        self._children: ChildPool | None = None  # the isolated handlers' processes
        self._burst: Burst | None = None  # the last burst run's watch (`run(burst=True)`)

    # -- configuration ---------------------------------------------------------

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
            self.cluster = flag("cluster", cluster)
        client_fields = {f.name for f in dataclasses.fields(self.settings.client)}
        client_changes = {k: changes.pop(k) for k in list(changes) if k in client_fields}
        client = with_overrides(self.settings.client, **client_changes)
        self.settings = with_overrides(self.settings, client=client, **changes)

    def add_hooks(self, hooks: Hooks) -> None:
        """Report to ``hooks`` (a `worqr.Hooks`) what this worker's processes and
        its client do."""
        self._hooks.add(hooks)

    def add_observer(self, observer: Observer) -> None:
        """Receive the client's life events as ``observer(event, fields)`` (see
        `Worqr.add_observer`)."""
        self._hooks.add(ObserverHooks(observer))

    @property
    def worker_id(self) -> str | None:
        return None if self._client is None else self._client.worker_id

    @property
    def client(self) -> AsyncWorqr | None:
        """This run's client (None outside a run): how code on the worker's
        loop reads the mesh as the worker does (`worqr.testing.drain`)."""
        return self._client

    @property
    def burst_left(self) -> int | None:
        """How many jobs the last burst run left for later (delayed or retrying,
        due after its wait); None unless the last run was a burst that ran dry."""
        return None if self._burst is None else self._burst.left_for_later

    @property
    def in_flight(self) -> int:
        return 0 if self._dispatch is None else len(self._dispatch.running)

    # -- one run (called by Lifecycle.run_async) ---------------------------------

    def _prepare(self) -> AsyncWorqr:
        if not self._specs:
            raise WorqrError("no handlers: register one with @worker.handler(queue)")
        settings = self.settings
        unknown = sorted(set(settings.queue_limits) - set(self._specs))
        if unknown:
            logger.warning("queue_limits name queues without a handler: %s", unknown)
        persistent = self.persistent_queues
        if self._burst_wait is not None:
            refuse_persistent(persistent)
        self._burst = None
        capacity = Capacity(
            list(self._specs),
            concurrency=settings.concurrency,
            limits=settings.queue_limits,
            persistent=persistent,
            batch=settings.batch,
        )
        self._wanted = {queue: asyncio.Event() for queue in self._specs}
        self._children = self._child_pool()
        # Persistent sync handlers hold their thread for good: give them their own.
        threads = settings.concurrency + sum(
            settings.queue_limits.get(q, settings.concurrency)
            for q in persistent
            if not self._specs[q].is_async
        )
        client = AsyncWorqr(
            self.url,
            settings=settings.client,
            redis=self._redis,
            subscriber=self._subscriber,
            cluster=self.cluster,
            sentinels=self._sentinels,
            service_name=self._service_name,
        )
        job_queues = frozenset(queue for queue, spec in self._specs.items() if spec.jobs)
        retrying = partial(until_answered, stopping_now=self._stopping_now)
        acks = Acknowledger(client, self._hooks, self._track, retrying, job_queues)
        jobs = JobOutcomes(
            client, settings=settings.client.jobs, acks=acks, hooks=self._hooks, track=self._track
        )
        stopping = self._is_stopping
        self._dispatch = Dispatcher(
            client,
            settings=settings,
            specs=self._specs,
            capacity=capacity,
            acks=acks,
            jobs=jobs,
            hooks=self._hooks,
            threads=HandlerThreads(asyncio.get_running_loop(), threads, "worqr-handler"),
            wake=self._wake,
            track=self._track,
            stopping=stopping,
        )
        self._puller = Puller(
            client,
            capacity=capacity,
            acks=acks,
            hooks=self._hooks,
            wanted=self._wanted,
            persistent=frozenset(persistent),
            job_queues=job_queues,
            start=self._dispatch.start,
            wake=self._wake,
            stopping=stopping,
        )
        self._dispatch.children = self._children
        client.add_hooks(self._dispatch)  # stops handlers of a lost lease first
        client.add_hooks(self._hooks)
        self._client = client
        self._lanes = make_lanes(
            client,
            self._dispatch,
            capacity,
            job_queues,
            stopping=self._is_stopping,
            size=settings.concurrency,
            take_ahead=settings.take_ahead,
        )
        if self._lanes is None and settings.take_ahead:  # the loop's handlers take ahead
            self._dispatch.pace = HandlerPace(capacity, settings.concurrency)
        take_loop = self._puller.take_loop if self._lanes is None else self._lanes.take_loop
        self._watched = Watched(
            client, settings.client.ttl, [take_loop], self._started, self._is_stopping
        )
        if settings.health_port is not None:  # last: nothing after it can fail
            self._serve_probes(settings.health_port, settings.health_host)
        return client

    async def _after_close(self) -> None:
        if self._children is not None:  # every handler has ended by now
            await asyncio.to_thread(self._children.close)

    def _serve_probes(self, port: int, host: str) -> None:
        # Imported here: `http.server` (and `email`, `html`, ...) adds a tenth of
        # worqr's import time to every worker, most of which serve no probes.
        from .probes import ProbeServer

        try:
            self._probes = ProbeServer(self.health_checks(self.settings.livez_after), port, host)
        except OSError as error:
            raise WorqrError(
                f"cannot serve health probes on {host}:{port}: {error.strerror or error}"
            ) from None
        logger.info("health probes on http://%s:%d/livez and /readyz", host, self._probes.port)

    def health_checks(self, livez_after: float) -> WorkerChecks:
        """The health checks of this worker's runs (`progress`)."""
        return WorkerChecks(lambda: self._watched, livez_after)

    def _child_pool(self) -> ChildPool | None:
        """The isolated handlers' children (every sync one's with
        ``settings.isolated``), or None when no handler is isolated."""
        settings = self.settings
        if settings.isolated:
            for queue, spec in self._specs.items():
                if not spec.is_async and not spec.isolated:
                    self._specs[queue] = isolate(spec)
        targets = {
            queue: target_of(spec.function, queue)
            for queue, spec in self._specs.items()
            if spec.isolated
        }
        if not targets:
            return None
        size = settings.concurrency + sum(
            settings.queue_limits.get(queue, settings.concurrency)
            for queue in self.persistent_queues
            if queue in targets
        )
        return ChildPool(
            targets,
            PoolSettings(
                size=size,
                grace=settings.child_grace,
                max_jobs=settings.max_jobs_per_child,
                max_memory=settings.max_memory_per_child,
            ),
        )

    def _join_steps(self, client: AsyncWorqr) -> list[Callable[[], Awaitable[Any]]]:
        steps: list[Callable[[], Awaitable[Any]]] = [client.start_worker]
        if self._children is not None:  # started ahead: no job waits for a child to boot
            steps.insert(0, partial(asyncio.to_thread, self._children.start))
        for queue, spec in self._specs.items():
            if spec.jobs:  # refused, naming the queue, when it holds tasks
                steps.append(partial(client.internals.mark_job_queue, queue))
            steps.append(partial(client.on, queue, self._listener(queue)))
            steps.append(partial(client.start_work, queue))
        for (queue, name), declared in self._crons.items():  # upserts: equal ones are no-ops
            steps.append(partial(client.schedule, queue, name, **declared.keywords()))
        return steps

    def _loops(self, client: AsyncWorqr) -> list[asyncio.Task[None]]:
        assert self._puller is not None and self._dispatch is not None
        if self.settings.history:  # before any loop runs: every run is counted
            self._hooks.add(self._history)
        else:
            self._hooks.remove(self._history)
        if self._lanes is not None:
            pullers = [asyncio.create_task(self._run_lanes(self._lanes), name="worqr-lanes")]
        else:
            pullers = [
                asyncio.create_task(self._puller.pull(queue), name=PULLER_PREFIX + queue)
                for queue in self._specs
            ]
        if self._watched is not None:
            self._watched.pullers = pullers
        fence = asyncio.create_task(self._dispatch.fence(), name="worqr-fence")
        wait = self._burst_wait
        burst = [] if wait is None else [self._start_burst(client, wait)]
        watch = asyncio.create_task(self._dispatch.watch(), name="worqr-watch")
        if self.settings.history:
            # Not among the loops: it outlives the drain, for the last runs' counts (_close).
            history = self._history.run(client)
            self._history_task = asyncio.create_task(history, name="worqr-history")
        return [*pullers, *burst, fence, watch]

    def _start_burst(self, client: AsyncWorqr, wait: float) -> asyncio.Task[None]:
        queues = {queue: spec.jobs for queue, spec in self._specs.items()}
        idle = lambda: self.in_flight == 0  # noqa: E731
        done = partial(self._request_stop, False)
        self._burst = Burst(client, queues, wait, idle=idle, done=done)
        return asyncio.create_task(self._burst.watch(), name="worqr-burst")

    async def _run_lanes(self, lanes: Lanes) -> None:
        """Start the lanes; they take work until the worker stops (this task is
        cancelled then). Each queue's subscription wakes them to drain it."""
        lanes.start()
        await asyncio.get_running_loop().create_future()

    def _listener(self, queue: str) -> Callable[[str, Any], None]:
        def listen(event: str, message: Any) -> None:
            dispatch, puller = self._dispatch, self._puller
            assert dispatch is not None and puller is not None
            if event == "work":
                self._hooks.on_wakeup(queue)
                self._wake([queue])
            elif event == "due":
                self._due_in(queue, message / 1000)
            elif event == "cancel":
                for pid in message:
                    dispatch.stop(pid, "cancel")
            elif event == "delete":
                dispatch.stop_queue(queue, "cancel")
                puller.configured.discard(queue)  # the queue's options went with it
                self._wake([queue])  # rejoin the (now empty) queue

        return listen

    def _due_in(self, queue: str, seconds: float) -> None:
        """This worker holds the queue's timer: delayed jobs are due in ``seconds``
        (Redis's clock). A newer hint replaces the one before."""
        previous = self._timers.pop(queue, None)
        if previous is not None:
            previous.cancel()
        loop = asyncio.get_running_loop()
        self._timers[queue] = loop.call_later(max(0.0, seconds), self._due, queue)

    def _due(self, queue: str) -> None:
        """The timer fired: with a free slot, take (a take promotes due jobs);
        without one, promote them for idle peers."""
        self._timers.pop(queue, None)
        if self._stopping or self._dispatch is None:
            return
        if self._dispatch.capacity.free(queue) > 0:
            self._wake([queue])
        elif self._client is not None:
            task = asyncio.create_task(self._promote(self._client, queue))
            self._track(task)

    async def _promote(self, client: AsyncWorqr, queue: str) -> None:
        try:
            await client.internals.promote_due(queue)
        except Exception as error:  # the next poll or hint tries again
            logger.debug("promoting due jobs of %r failed: %s", queue, error)

    def _wake(self, queues: list[str]) -> None:
        if not self._stopping:
            lanes = self._lanes
            for queue in queues:
                if lanes is not None:
                    lanes.wake(queue)
                else:
                    self._wanted[queue].set()

    def _is_stopping(self) -> bool:
        return self._stopping

    # -- stopping (called by Lifecycle) ------------------------------------------

    def _cancel_all(self, reason: Reason, *, persistent_only: bool = False) -> None:
        if self._dispatch is not None:
            self._dispatch.stop_all(reason, persistent_only=persistent_only)

    def _forget_unfinished(self) -> None:
        if self._dispatch is not None:
            self._dispatch.forget_unfinished()

    def _shutdown_executor(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._dispatch is not None:
            self._dispatch.threads.shutdown()
        if self._lanes is not None:
            self._lanes.shutdown()
        self._dispatch = self._puller = self._lanes = None
        self._client = None
        self._watched = None
        if self._probes is not None:
            probes, self._probes = self._probes, None
            probes.close()

    async def _before_close(self, client: AsyncWorqr) -> None:
        task, self._history_task = self._history_task, None
        if task is not None:  # a run that keeps the history
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await self._history.last_flush(client)

    def _more_to_wait_for(self) -> set[asyncio.Future[Any]]:
        drained = None if self._lanes is None else self._lanes.drained()
        return set() if drained is None else {drained}
