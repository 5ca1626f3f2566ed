"""Handler threads that take their own work: the fast path of sync handlers.

In a worker whose handlers are all sync (and none persistent), each handler
thread is a lane: it takes processes with a sync twin of the worker's client,
runs the handler inline (an isolated one's round trip to its child process
included), and carries the finish into its next take, in one
script call, as the loop's puller does for async handlers. A task whose handler
returns costs no hop between threads, except the wake-up of an idle lane. Lanes
that end while another lane's take of their queue is in flight leave their
finishes to it (`_combine`): one call carries them all, and takes their next
processes, as the puller batches the finishes of handlers that end together.
Taken processes wait in one line (`line`: each queue's oldest first, queues in
turn); while handlers are short, lanes take ahead (`pace`), so a lane that ends
finds its next process in the line instead of waiting for a round trip.

The event loop keeps the rest: the heartbeat, pub/sub (`wake` orders an idle
lane to take), the watcher and the fence (they stop lane handlers through
`Dispatcher.running`), job timeouts (a job that has one is started by the
`Dispatcher` itself), and every outcome but a plain finish (handed to
`Dispatcher.settle_lane`). Slots stay in `Capacity`, shared with the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from .._clients.outage import OutageLog
from .._hooks import Hooks
from .._jobs import JobProcess
from .._process import Process
from .._tracing import enter_run
from .capacity import Capacity
from .context import ProcessContext, set_current
from .dispatch import Dispatcher
from .job_context import JobContext, set_current_job
from .lane_calls import Finish, LaneCalls
from .lane_orders import STOP, LaneOrders
from .pace import HandlerPace
from .running import HandlerEnd, Running, call_sync, child_reports
from .taking import Pause, SendAlone, Take, TakeLoop, Took, Wake

logger = logging.getLogger("worqr.worker")


class Lanes:
    """The handler threads of a worker whose handlers are all sync.

    ``stopping`` tells when to stop taking; while ``lease_fresh`` is False (or
    the lease is refused) a lane waits ``fence_wait`` seconds between tries.
    """

    def __init__(
        self,
        calls: LaneCalls,
        *,
        loop: asyncio.AbstractEventLoop,
        size: int,
        dispatch: Dispatcher,
        capacity: Capacity,
        hooks: Hooks,
        stopping: Callable[[], bool],
        lease_fresh: Callable[[], bool],
        fence_wait: float,
        take_ahead: bool = False,
    ) -> None:
        self._calls = calls
        self._loop = loop
        self._size = size
        self._dispatch = dispatch
        self._capacity = capacity
        self._hooks = hooks
        self._stopping = stopping
        self.take_loop: TakeLoop[Finish] = TakeLoop(
            capacity,
            stopping=stopping,
            lease_fresh=lease_fresh,
            fence_wait=fence_wait,
            fills=False,  # a lane runs what it took
        )
        self._orders = LaneOrders()
        self._lock = threading.Lock()  # the sets and dicts below, _busy, _drained
        self._ordered: set[str] = set()  # queues with a take order not picked up yet
        self._refused: set[str] = set()  # queues woken while no slot was free
        self._calling: set[str] = set()  # queues a lane carries finishes into a take of
        self._deposits: dict[str, list[tuple[Finish, int]]] = {}  # finishes (and slots) waiting
        self._pace = HandlerPace(capacity, size) if take_ahead else None
        self._busy = 0  # handlers running on a lane, or their finish in flight
        self._drained: asyncio.Future[None] | None = None
        self._threads: list[threading.Thread] = []
        self._context = contextvars.copy_context()  # what handlers start from, as on the loop

    # -- the loop's side -----------------------------------------------------------

    def start(self) -> None:
        for index in range(self._size):
            thread = threading.Thread(target=self._run, name=f"worqr-handler_{index}")
            self._threads.append(thread)
            thread.start()

    def wake(self, queue: str) -> None:
        """``queue`` may have work: an idle lane takes from it, or, with no slot
        free, the queue is starved and the next slot that frees serves it."""
        with self._lock:
            if queue in self._ordered:
                return
            self._ordered.add(queue)
        if self._capacity.wanted(queue):
            self._orders.put(queue)
        else:
            with self._lock:
                self._ordered.discard(queue)
                # A take in flight holds the slots; if it comes back short it
                # clears the starved mark, and this wake-up must not die with it.
                self._refused.add(queue)

    def drained(self) -> asyncio.Future[None] | None:
        """On the loop: a future done when no lane runs a handler (None: none does)."""
        with self._lock:
            if self._busy == 0:
                return None
            if self._drained is None or self._drained.done():
                self._drained = self._loop.create_future()
            return self._drained

    def shutdown(self) -> None:
        """Lanes exit when idle; one still in its handler exits when it returns
        (its finish then goes nowhere: deregistering gave its task back)."""
        for _ in self._threads:
            self._orders.put(STOP)
        self._calls.close_after(self._threads)

    # -- one lane ------------------------------------------------------------------

    def _run(self) -> None:
        lane = _Lane(self)
        while True:
            order = self._orders.wait()
            if order is STOP:
                return
            try:
                self._serve(order, lane)
            except Exception:  # a bug: logged; the lane lives on
                logger.exception("a handler lane failed")

    def _serve(self, order: object, lane: _Lane) -> None:
        if isinstance(order, str):
            with self._lock:
                self._ordered.discard(order)
            self._orders.line_up(self._take(order, [], lane), runs_one=True)
        # The line is empty before a lane idles: nothing in it waits unseen.
        while (process := self._orders.next()) is not None:
            self._orders.line_up(self._work(process, lane), runs_one=True)

    def _work(self, process: Process, lane: _Lane) -> list[Process]:
        """Run one process; returns what the take carrying its finish brought."""
        dispatch, queue = self._dispatch, process.queue
        if self._stopping():  # taken as the worker stopped: deregistering returns it
            self._wake_all(self._capacity.release(queue))
            return []
        if process.worker_id in dispatch.lost_ids or dispatch.cancelled_before_start(process):
            # Taken under a lost id (the core returns it), or cancelled as it waited.
            self._wake_all(self._capacity.release(queue))
            self._hooks.on_dropped(queue)
            return []
        spec = dispatch.specs[queue]
        job = process if isinstance(process, JobProcess) else None
        if job is not None and dispatch.jobs.timeout(job, spec) is not None:
            self._calls.to_loop(dispatch.start, process)  # its timer lives on the loop
            return []
        end = HandlerEnd()
        running = Running(process, spec, ProcessContext(process), inner=end)
        if spec.isolated:
            assert dispatch.children is not None  # a worker with isolated handlers has one
            running.halt = dispatch.children.halt()  # before a cancel can find it
        context = self._context.copy()
        context.run(set_current, running.context)
        if job is not None:
            report = partial(self._report, running, job)
            write = partial(self._write_log, running, job)
            running.job = JobContext(job, running.context.cancelled, report, write)
            context.run(set_current_job, running.job)
            self._hooks.on_job_started(queue, job.waited)
        with self._lock:
            self._busy += 1
        try:
            dispatch.register(running)
            self._hooks.on_started(queue)
            if job is not None:
                self._hooks.on_job_run_started(job)
                enter_run(context, job.id)  # its span current in the handler (tracing)
            try:
                end.returned(context.run(self._call, running))
            except BaseException as error:  # the outcome policy decides; the lane lives on
                end.raised(error)
            return self._ended(running, lane)
        finally:
            self._idle_one()

    def _call(self, running: Running) -> Any:
        """The handler's call, on this thread: in process, or a round trip to a
        child for an isolated one (a stop halts the child: `Running.halt`)."""
        spec, process, halt = running.spec, running.process, running.halt
        if halt is None:
            return call_sync(spec.function, process.task)
        children = self._dispatch.children
        assert children is not None  # the halt came from it
        return children.run(spec.queue, process, child_reports(running.job), halt)

    def _report(self, running: Running, job: JobProcess, value: bytes) -> None:
        running.progressed = True  # its end goes through the loop, after this report
        self._dispatch.jobs.report(self._loop, job, value)

    def _write_log(self, running: Running, job: JobProcess, line: bytes) -> None:
        running.progressed = True  # its end goes through the loop, after these lines
        self._dispatch.jobs.logs.write(self._loop, job, line)

    def _ended(self, running: Running, lane: _Lane) -> list[Process]:
        """A plain finish rides on the lane's next take; anything else is settled
        on the loop (which acknowledges it and frees its slot)."""
        dispatch, process = self._dispatch, running.process
        finish = self._plain_finish(running)
        if finish is None:
            self._calls.to_loop(dispatch.settle_lane, running)
            return []
        if self._pace is not None:
            self._pace.ended(finish[1])
        if dispatch.running.pop(process.id, None) is not running:
            return []  # a shutdown that ran out of time gave its task back already
        # The freed slot stays with this lane (no other take can grab it first):
        # a starved queue gets it, round robin; else the finished process's own
        # queue, looked at again even when its last take came back short, so
        # that work which arrived meanwhile starts without a wake-up.
        queue = process.queue
        target, reserved = self._capacity.pass_on(queue)
        if target != queue:
            self._calls.finish_alone([finish])
            return self._take(target, [], lane, reserved)
        with self._lock:
            if queue in self._calling:
                # Another lane's take of this queue is in flight: its next call
                # carries this finish (and its slots), and this lane idles.
                self._deposits.setdefault(queue, []).append((finish, reserved))
                self._busy += 1  # until that call lands: a drain waits for it
                return []
            self._calling.add(queue)
        return self._combine(queue, [finish], reserved, lane)

    def _combine(
        self, queue: str, finishes: list[Finish], reserved: int, lane: _Lane
    ) -> list[Process]:
        """Carry ``finishes`` into a take, then the finishes other lanes left
        meanwhile, until none wait: one call per batch when lanes end together
        (as the loop's puller batches them). Processes taken while more
        finishes wait go to idle lanes, the ones that left them among them."""
        carried = 0  # deposits carried: each held the drain open
        try:
            while True:
                processes = self._take(queue, finishes, lane, reserved)
                with self._lock:
                    deposits = self._deposits.pop(queue, [])
                    if not deposits:
                        self._calling.discard(queue)
                if not deposits:
                    return processes
                self._orders.line_up(processes, runs_one=False)
                finishes = [finish for finish, _ in deposits]
                reserved = sum(slots for _, slots in deposits)
                carried += len(deposits)
        except BaseException:  # a bug: never leave finishes waiting for a call
            with self._lock:
                left = self._deposits.pop(queue, [])
                self._calling.discard(queue)
            for finish, _ in left:
                self._calls.to_loop(self._dispatch.finish_alone, *finish)
            self._wake_all(self._capacity.abandon(queue, sum(slots for _, slots in left)))
            carried += len(left)
            raise
        finally:
            for _ in range(carried):
                self._idle_one()

    def _plain_finish(self, running: Running) -> Finish | None:
        end = running.inner
        assert isinstance(end, HandlerEnd)
        if running.reason is not None or running.progressed or end.exception() is not None:
            return None
        kind, data = "n", b""
        if isinstance(running.process, JobProcess):
            try:
                kind, data = self._dispatch.jobs.stored(end.result())
            except (TypeError, ValueError):
                return None  # failed on the loop, which says why
        return running.process, running.seconds(), kind, data

    # -- calls ---------------------------------------------------------------------

    def _take(
        self, queue: str, finishes: list[Finish], lane: _Lane, reserved: int = 0
    ) -> list[Process]:
        """Take as many processes as ``queue`` has free slots (``reserved`` of
        them held already), carrying ``finishes``, until Redis answers or the
        worker stops. The decisions are `taking.TakeLoop`'s; this drives them
        with blocking calls."""
        lane.queue, lane.finishes, lane.taken = queue, finishes, []
        steps = self.take_loop.steps(queue, lane, lane.outage, lane.outage, reserved)
        try:
            for action in steps:
                if type(action) is Take:
                    self._send(queue, action)
                elif type(action) is Took:
                    self._took(queue, action)
                    lane.taken = action.processes
                elif type(action) is Pause:
                    time.sleep(action.seconds)
                elif type(action) is SendAlone:
                    # A refused take's finishes are resent by the loop, until Redis answers.
                    send = self._calls.resend if action.refused else self._calls.finish_alone
                    send(action.finishes)
                elif type(action) is Wake:
                    self._wake_all(action.queues)
        except BaseException:  # a bug: the take in flight gives its slots back
            steps.close()
            raise
        if lane.finishes:  # stopped: the work was ours, its finish goes out
            self._calls.finish_alone(lane.carry())
        return lane.taken

    def _send(self, queue: str, take: Take[Finish]) -> None:
        with self._lock:
            self._refused.discard(queue)
        try:
            take.reply = self._calls.take(queue, take.finishes, take.count)
        except Exception as error:  # the step decides what it means
            take.error = error

    def _took(self, queue: str, took: Took[Finish]) -> None:
        self._calls.report(took.finishes, took.accepted)
        self._hooks.on_dequeue(queue, took.asked, len(took.processes))
        self._wake_all(took.wake)

    def woken(self, queue: str) -> bool:
        """Whether a wake-up of ``queue`` came while its take was in flight."""
        with self._lock:
            return queue in self._refused

    # -- bookkeeping ---------------------------------------------------------------

    def _wake_all(self, queues: list[str]) -> None:
        if not self._stopping():
            for queue in queues:
                self.wake(queue)

    def _idle_one(self) -> None:
        with self._lock:
            self._busy -= 1
            drained = self._drained if self._busy == 0 else None
        if drained is not None:
            self._calls.to_loop(_resolve, drained)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Lane:
    """One lane's own state: its outage log, and what it holds for the take loop
    it runs (`taking.Finishes`): the queue, the finishes it carries, and the
    processes the take brought."""

    __slots__ = ("_lanes", "finishes", "outage", "queue", "taken")

    def __init__(self, lanes: Lanes) -> None:
        self._lanes = lanes
        self.outage = OutageLog("take work")
        self.queue = ""
        self.finishes: list[Finish] = []
        self.taken: list[Process] = []

    def carry(self) -> list[Finish]:
        finishes, self.finishes = self.finishes, []
        return finishes

    def keep(self, finishes: list[Finish]) -> None:
        self.finishes = finishes + self.finishes

    def again(self) -> bool:
        return self._lanes.woken(self.queue)
