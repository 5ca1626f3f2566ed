"""The processes in flight of one worker run: starting their handlers, stopping
them (cancelled, lease lost or stale, shutdown), and settling how each ended."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

from .._clients.async_client import AsyncWorqr
from .._hooks import Hooks
from .._jobs import JobProcess
from .._process import Process
from .acks import Acknowledger
from .capacity import Capacity
from .context import ProcessContext
from .isolation.pool import ChildPool
from .job_context import JobContext
from .job_outcomes import JobOutcomes
from .line import Line
from .pace import HandlerPace
from .running import HandlerSpec, Outcome, Reason, Running, launch
from .settings import WorkerSettings
from .threads import HandlerThreads

logger = logging.getLogger("worqr.worker")

PAYLOAD_LOG_CHARS = 200  # a failure log never carries a whole (maybe huge) payload
EARLY_CANCELS = 4096  # cancels kept for processes not running (most are other workers')


class Dispatcher(Hooks):
    """Runs handlers for taken processes and settles their outcome (the policy
    is `Running.outcome`). As a `Hooks` of the client it hears of a lost lease
    and stops the handlers that ran under the lost id."""

    def __init__(
        self,
        client: AsyncWorqr,
        *,
        settings: WorkerSettings,
        specs: dict[str, HandlerSpec],
        capacity: Capacity,
        acks: Acknowledger,
        jobs: JobOutcomes,
        hooks: Hooks,
        threads: HandlerThreads,
        wake: Callable[[list[str]], None],
        track: Callable[[asyncio.Future[Any]], None],
        stopping: Callable[[], bool],
    ) -> None:
        self.client = client
        self.settings = settings
        self.specs = specs
        self.capacity = capacity
        self.acks = acks
        self.jobs = jobs
        self.hooks = hooks
        self.threads = threads
        self.children: ChildPool | None = None  # isolated handlers' processes, if any
        self.running: dict[str, Running] = {}
        self._wake = wake
        self._track = track
        self._stopping = stopping
        self.lost_ids: set[str] = set()  # our former worker ids (their processes are peers')
        # Cancels heard for processes not running: one taken ahead may wait in a line.
        self._cancelled_early: OrderedDict[str, bool] = OrderedDict()
        self.lanes = False  # sync handlers run on lanes: no puller carries finishes
        self.pace: HandlerPace | None = None  # set when the loop's handlers take ahead
        self._line = Line()  # taken ahead, waiting to start: oldest first, queues in turn
        self._counted: set[str] = set()  # running pids that count toward concurrency

    # -- starting ----------------------------------------------------------------

    def start(self, process: Process) -> None:
        """Start a taken process's handler, or, when ``concurrency`` handlers run
        (it was taken ahead), as soon as one of them ends."""
        spec = self.specs[process.queue]
        if not spec.persistent and len(self._counted) >= self.settings.concurrency:
            self._line.append(process)
            return
        self._launch(process)

    def _start_waiting(self) -> None:
        """Processes taken ahead start as handlers end, in the line's order;
        none once the worker stops (deregistering gives them back)."""
        while self._line and len(self._counted) < self.settings.concurrency:
            process = self._line.pop()
            if self._stopping():
                self._wake(self.capacity.release(process.queue))
            else:
                self._launch(process)

    def _launch(self, process: Process) -> None:
        if process.worker_id in self.lost_ids or self.cancelled_before_start(process):
            # Taken under an id whose lease is gone (the core returns it to the
            # queue), or cancelled while it waited: it never starts.
            self._wake(self.capacity.release(process.queue))
            self.hooks.on_dropped(process.queue)
            return
        loop = asyncio.get_running_loop()
        spec = self.specs[process.queue]
        running = Running(process, spec, ProcessContext(process))
        if isinstance(process, JobProcess):
            report = partial(self.jobs.report, loop, process)
            write = partial(self.jobs.logs.write, loop, process)
            running.job = JobContext(process, running.context.cancelled, report, write)
            self.hooks.on_job_started(process.queue, process.waited)
            timeout = self.jobs.timeout(process, spec)
            if timeout is not None:
                running.deadline = loop.call_later(timeout, self._timed_out, running)
        # The hooks hear of the start first: a thread may start the handler at once,
        # and the run's span (tracing) must be there for it.
        self.hooks.on_started(process.queue)
        if isinstance(process, JobProcess):
            self.hooks.on_job_run_started(process)
        inner = running.inner = launch(running, loop, self.threads, self.children)
        self.running[process.id] = running
        if not spec.persistent:
            self._counted.add(process.id)
        inner.add_done_callback(partial(self._ended, running))
        self._track(inner)  # a drain waits for the handler

    def _timed_out(self, running: Running) -> None:
        """A job ran past its timeout: an async handler is cancelled and an
        isolated one's child stopped (each settled when it ends); a sync one
        cannot be, so its attempt fails now while its thread keeps the slot
        until it returns (it sees ``cancelled`` set)."""
        if not running.stop("timeout"):
            return  # it had ended or was stopped for another reason first
        self.hooks.on_job_timeout(running.process.queue)
        if not running.spec.is_async and running.halt is None:
            running.settled = True
            assert isinstance(running.process, JobProcess)
            limit = self.jobs.timeout(running.process, running.spec) or 0.0
            error = TimeoutError(f"ran past {limit:g} s")
            task = asyncio.create_task(self.jobs.fail(running, "error", error, running.seconds()))
            self._track(task)

    # -- ending ------------------------------------------------------------------

    def _ended(self, running: Running, _: object) -> None:
        """The handler ended. The common case (it returned) needs no task of its
        own: its finish waits for the queue's next call, and a drain waits for it."""
        if running.deadline is not None:
            running.deadline.cancel()
        if running.settled:  # a sync job's timeout acknowledged it already
            self._end(running)
            return
        try:
            if self.running.get(running.process.id) is running and not self._stopping():
                outcome, _error = running.outcome()
                if outcome is Outcome.FINISHED and self._finish_later(running):
                    return
        except Exception:  # never leave a process without an outcome
            logger.exception("settling process %s failed", running.process.id)
        self._track(asyncio.create_task(self._settle_then_end(running)))

    def _finish_later(self, running: Running) -> bool:
        """Batch the finish for the queue's next take; False when it cannot ride
        (a job's result it cannot store, or progress still being written, or
        lanes take the queue's work: no puller's take would carry it)."""
        if self.lanes:
            return False
        process, seconds = running.process, running.seconds()
        if self.pace is not None and not running.spec.persistent:
            self.pace.ended(seconds)
        kind, data = "n", b""
        if isinstance(process, JobProcess):
            if self.jobs.has_progress(process):
                return False
            try:
                kind, data = self.jobs.stored(running.inner.result() if running.inner else None)
            except (TypeError, ValueError):
                return False  # settled as a failure
        # Its slot frees first, so the call that carries the finish refills it.
        self.acks.finish_later(process, seconds, kind, data)
        self._end(running)
        self._wake([process.queue])
        return True

    def settle_lane(self, running: Running) -> None:
        """A lane's handler ended other than in a plain finish: settle it here."""
        self._track(asyncio.create_task(self._settle_then_end(running)))

    def finish_alone(self, process: Process, seconds: float, kind: str, data: bytes) -> None:
        """A lane's finish that did not land: resent until Redis answers."""
        self._track(asyncio.create_task(self.acks.finish(process, seconds, kind, data)))

    async def _settle_then_end(self, running: Running) -> None:
        try:
            await self._settle(running)
        finally:
            self._end(running)

    def _end(self, running: Running) -> None:
        if self.running.get(running.process.id) is not running:
            return
        self.running.pop(running.process.id, None)
        self._counted.discard(running.process.id)
        self._wake(self.capacity.release(running.process.queue))
        self._start_waiting()

    async def _settle(self, running: Running) -> None:
        """Acknowledge the outcome of a process whose handler ended."""
        process = running.process
        if self.running.get(process.id) is not running:
            return  # a shutdown that ran out of time already gave its task back
        outcome, error = running.outcome()
        if isinstance(process, JobProcess):
            await self.jobs.settle(running, outcome, error)
        else:
            await self._settle_task(process, outcome, error, running.seconds())

    async def _settle_task(
        self, process: Process, outcome: Outcome, error: BaseException | None, seconds: float
    ) -> None:
        """Acknowledge how the handler of a task's process ended, and tell the hooks."""
        queue, hooks, acks, client = process.queue, self.hooks, self.acks, self.client
        if outcome is Outcome.FAILED:
            self._log_failure(process, error)
        if outcome is Outcome.LEASE_LOST:
            hooks.on_fenced(queue)
        elif outcome is Outcome.SHUTDOWN:
            hooks.on_retried(queue)  # deregistering returns it
        elif outcome is Outcome.CANCELLED:
            # The process is gone already; the ack clears our records of it. A stop,
            # not a finish: were it somehow still there, it would be requeued, not lost.
            await acks.send(client.stop_process, process)
            hooks.on_cancelled(queue)
        elif outcome in (Outcome.RETRIED, Outcome.RETURNED):
            if await acks.send(client.stop_process, process):
                hooks.on_retried(queue)
            else:
                hooks.on_fenced(queue)
        elif outcome in (Outcome.FAILED, Outcome.FAILED_NOW, Outcome.TIMED_OUT):
            if await acks.send(client.fail_process, process):
                hooks.on_failed(queue, seconds)
            else:
                hooks.on_fenced(queue)
        else:  # while stopping (else `_ended` batches it): no puller to carry it
            await acks.finish(process, seconds)

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

    # -- stopping handlers -------------------------------------------------------

    def stop(self, pid: str, reason: Reason) -> None:
        running = self.running.get(pid)
        if running is not None:
            running.stop(reason)
        elif reason == "cancel":  # maybe taken ahead, waiting: it will not start
            self._cancelled_early[pid] = True
            while len(self._cancelled_early) > EARLY_CANCELS:
                self._cancelled_early.popitem(last=False)  # pids of other workers' too
            # A lane (another thread) may have registered it between the lookup
            # and the mark, and looked for a mark before there was one: whoever
            # pops the mark stops it (`register` does the same), so once.
            running = self.running.get(pid)
            if running is not None and self._cancelled_early.pop(pid, False):
                running.stop(reason)

    def register(self, running: Running) -> None:
        """Make a lane's run findable by a cancel (from its lane's thread). A
        cancel that came between the lane's start check and this call was kept
        for the start: it stops the run now, before its handler starts."""
        self.running[running.process.id] = running
        if self.cancelled_before_start(running.process):
            running.stop("cancel")

    def cancelled_before_start(self, process: Process) -> bool:
        """Whether a cancel reached ``process`` before its handler started (then
        the cancel removed it from Redis: it must not start). Any thread."""
        return self._cancelled_early.pop(process.id, False)

    def stop_queue(self, queue: str, reason: Reason) -> None:
        for running in list(self.running.values()):
            if running.process.queue == queue:
                running.stop(reason)

    def stop_all(self, reason: Reason, *, persistent_only: bool = False) -> int:
        """Ask handlers to stop; returns how many were asked."""
        return sum(
            running.stop(reason)
            for running in list(self.running.values())
            if running.spec.persistent or not persistent_only
        )

    def on_lease_lost(self, worker_id: str) -> None:
        # Runs in the heartbeat task, before the core returns the old id's processes.
        self.lost_ids.add(worker_id)
        for running in list(self.running.values()):
            if running.process.worker_id == worker_id:
                running.stop("lease")

    async def fence(self) -> None:
        """Self-fencing: a worker whose heartbeats stopped landing stops its
        handlers before its lease can expire, so no task runs here while a peer
        that failed us runs it too."""
        tick = self.settings.client.heartbeat / 4
        while True:
            await asyncio.sleep(tick)
            if self.running and not self.client.lease_fresh():
                stopped = self.stop_all("stale")
                if stopped:
                    logger.warning(
                        "no heartbeat landed for %.1f s: stopped %d handlers before peers "
                        "may take their tasks",
                        self.settings.client.ttl * 2 / 3,
                        stopped,
                    )

    async def watch(self) -> None:
        """Pub/sub is a hint: every poll interval, stop handlers whose process
        vanished (cancelled, or failed over to a peer) without us hearing of it."""
        while True:
            await asyncio.sleep(self.settings.client.poll_interval)
            by_queue: dict[str, list[str]] = {}
            for pid, running in list(self.running.items()):  # lanes add to it
                if running.reason is None:
                    by_queue.setdefault(running.process.queue, []).append(pid)
            for queue, pids in by_queue.items():
                try:
                    exist = await self.client.processes_exist(queue, pids)
                except Exception as error:  # Redis away: the heartbeat logs the outage
                    logger.debug("process check of %r failed: %s", queue, error)
                    break
                for pid, alive in zip(pids, exist, strict=True):
                    if not alive:
                        self.stop(pid, "cancel")

    def forget_unfinished(self) -> None:
        """After a shutdown's last wait: deregistering gives these tasks back."""
        stuck = 0
        for running in list(self.running.values()):
            if self.running.pop(running.process.id, None) is not running:
                continue  # a lane finished it meanwhile
            self._counted.discard(running.process.id)
            stuck += not running.spec.is_async and running.halt is None
            self.capacity.release(running.process.queue)
            self.hooks.on_retried(running.process.queue)
        while self._line:  # taken ahead, never started
            self.capacity.release(self._line.pop().queue)
        if stuck:
            # Threads cannot be killed: the process exits when these handlers return.
            logger.warning(
                "%d sync handlers ignore current_process().cancelled; their tasks were "
                "returned to their queues, but their threads still run",
                stuck,
            )
