"""How a worker starts and stops: `run()`, `run_async()`, ``async with``,
`stop()` from any thread, SIGINT/SIGTERM, and the graceful drain.

`Lifecycle` owns the event loop's side of a run: the stop events, the join (each
step retried until Redis answers, abandoned if a stop comes first), the tasks of
running processes, and the drain. `Worker` supplies what runs in between: the
seven abstract methods below, the contract between the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self

from .._clients.async_client import AsyncWorqr
from .._clients.outage import OutageLog
from .._errors import WorqrError, WrongQueueKindError
from .burst import DEFAULT_WAIT, burst_wait_of
from .isolation.pool import ChildBootError
from .running import Reason
from .settings import WorkerSettings

logger = logging.getLogger("worqr.worker")

CANCEL_WAIT = 1.0
"""Seconds cancelled handlers get to end before a shutdown gives their tasks back."""


async def until_answered(
    call: Callable[[], Awaitable[Any]], outage: OutageLog, stopping_now: Callable[[], bool]
) -> Any:
    """Run ``call`` until Redis answers (a worker never dies of an outage),
    unless the worker is stopping now."""
    while True:
        try:
            result = await call()
        except (WrongQueueKindError, ChildBootError):
            raise  # a mistake in the handlers, not an outage: retrying cannot help
        except Exception as error:
            if stopping_now():
                raise
            outage.failed(error)
            await asyncio.sleep(outage.backoff())
        else:
            outage.ok()
            return result


class Lifecycle(ABC):
    """The run of a worker; a subclass supplies what it runs (the abstract
    methods), and ``settings`` (its grace period)."""

    settings: WorkerSettings

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._stop_now: asyncio.Event | None = None
        self._stop_early: bool | None = None  # stop() before the loop ran: now?
        self._stopping = False  # no new work from here on
        self._started = threading.Event()
        self._ready: asyncio.Future[None] | None = None  # for `async with`
        self._runner: asyncio.Task[None] | None = None
        self._process_tasks: set[asyncio.Future[Any]] = set()
        self._burst_wait: float | None = None  # a burst run's wait (`burst`)

    # -- what the worker supplies ------------------------------------------------

    @abstractmethod
    def _prepare(self) -> AsyncWorqr:
        """Build this run's client and parts on the running loop (nothing is
        connected yet) and return the client; raises if there is nothing to run."""

    @abstractmethod
    def _join_steps(self, client: AsyncWorqr) -> list[Callable[[], Awaitable[Any]]]:
        """The calls that register the client and join every queue, in order; each
        is retried until Redis answers (`_join`)."""

    @abstractmethod
    def _loops(self, client: AsyncWorqr) -> list[asyncio.Task[None]]:
        """Background tasks; the first ones per queue take work, the last one watches."""

    @abstractmethod
    def _cancel_all(self, reason: Reason, *, persistent_only: bool = False) -> None:
        """Ask the running handlers (only the persistent ones, if said) to stop."""

    @abstractmethod
    def _forget_unfinished(self) -> None:
        """After the drain: let go of the processes still running (deregistering
        gives their tasks back)."""

    @abstractmethod
    async def _before_close(self, client: AsyncWorqr) -> None:
        """After the drain and the loops, before the client closes (the last
        write of what the run counted)."""

    @abstractmethod
    def _shutdown_executor(self) -> None:
        """At the end of a run: stop the handler threads and timers, drop the run's parts."""

    @abstractmethod
    async def _after_close(self) -> None:
        """What a run closes last, once its handlers ended and it deregistered
        (the isolated handlers' children)."""

    def _more_to_wait_for(self) -> set[asyncio.Future[Any]]:
        """Handlers a drain waits for besides the tracked tasks (lanes')."""
        return set()

    # -- public ------------------------------------------------------------------

    def run(self, *, burst: bool = False, burst_wait: float = DEFAULT_WAIT) -> None:
        """Run until SIGINT/SIGTERM (graceful; a second signal stops at once) or
        `stop()`. Signals are handled only when called on the main thread.
        ``burst``: also stop once the served queues have run dry, nothing due
        within ``burst_wait`` seconds (`burst`)."""
        on_main = threading.current_thread() is threading.main_thread()
        asyncio.run(self.run_async(install_signals=on_main, burst=burst, burst_wait=burst_wait))

    def stop(self, *, now: bool = False) -> None:
        """Ask the worker to stop (thread-safe). ``now`` skips the grace period;
        running handlers are cancelled and their tasks returned either way."""
        loop = self._loop
        if loop is None or loop.is_closed():
            self._stop_early = now or bool(self._stop_early)
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: run over
            loop.call_soon_threadsafe(self._request_stop, now)

    def wait_started(self, timeout: float | None = None) -> bool:
        """Block until the worker has registered and joined its queues."""
        return self._started.wait(timeout)

    async def __aenter__(self) -> Self:
        """Run in the background of the current loop until the block ends."""
        self._ready = asyncio.get_running_loop().create_future()
        runner = asyncio.create_task(self.run_async(), name="worqr-worker")
        self._runner = runner
        try:
            await asyncio.wait({self._ready, runner}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            runner.cancel()
            await asyncio.gather(runner, return_exceptions=True)
            raise
        if not self._ready.done():
            self._runner = None
            runner.result()  # the run's error, if it failed
            raise WorqrError("the worker was stopped before it started")
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            if not runner.done():
                self.stop(now=kind is not None and issubclass(kind, asyncio.CancelledError))
            await runner

    async def run_async(
        self,
        *,
        install_signals: bool = False,
        burst: bool = False,
        burst_wait: float = DEFAULT_WAIT,
    ) -> None:
        """Run inside the current event loop until `stop()` (or a signal). When the
        task running it is cancelled, it stops at once (tasks still returned).
        ``burst``, ``burst_wait``: as `run`."""
        if self._loop is not None:
            raise WorqrError("this worker is already running")
        self._burst_wait = burst_wait_of(burst, burst_wait)
        client = self._prepare()
        loop = self._loop = asyncio.get_running_loop()
        self._stop_requested, self._stop_now = asyncio.Event(), asyncio.Event()
        self._stopping = False
        self._started.clear()
        if self._stop_early is not None:
            self._request_stop(self._stop_early)
            self._stop_early = None
        signals = (signal.SIGINT, signal.SIGTERM) if install_signals else ()
        for signum in signals:
            loop.add_signal_handler(signum, self._on_signal, signum)
        loops: list[asyncio.Task[None]] = []
        cancelled = False
        try:
            try:
                if await self._join(client):
                    loops = self._loops(client)
                    self._mark_started()
                    await self._stop_requested.wait()
                await self._wind_down(loops)
            except asyncio.CancelledError:
                cancelled = True  # e.g. the TaskGroup it runs in failed
                self._request_stop(True)
                await self._wind_down(loops)
        finally:
            self._stopping = True
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            for signum in signals:
                loop.remove_signal_handler(signum)
            await self._before_close(client)
            await self._close(client)
        if cancelled:
            raise asyncio.CancelledError

    # -- inside a run --------------------------------------------------------------

    def _mark_started(self) -> None:
        self._started.set()
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)

    def _request_stop(self, now: bool) -> None:
        assert self._stop_requested is not None and self._stop_now is not None
        self._stopping = True
        if self._stop_requested.is_set() or now:
            self._stop_now.set()
            self._cancel_all("shutdown")
        self._stop_requested.set()

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        assert self._stop_requested is not None
        if self._stop_requested.is_set():
            logger.warning("received %s again: stopping now; running tasks go back", name)
        else:
            logger.info(
                "received %s: stopping; running handlers get %.1f s",
                name,
                self.settings.grace_period,
            )
        self._request_stop(False)

    def _track(self, task: asyncio.Future[Any]) -> None:
        self._process_tasks.add(task)
        task.add_done_callback(self._process_tasks.discard)

    async def _join(self, client: AsyncWorqr) -> bool:
        """Register and join every queue; False if a stop came first."""
        assert self._stop_requested is not None
        outage = OutageLog("worker start")
        for step in self._join_steps(client):
            attempt = asyncio.ensure_future(until_answered(step, outage, self._stopping_now))
            stop = asyncio.ensure_future(self._stop_requested.wait())
            try:
                await asyncio.wait({attempt, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
                if not attempt.done():
                    attempt.cancel()
                    await asyncio.gather(attempt, return_exceptions=True)
            if attempt.cancelled():
                return False
            attempt.result()
        return True

    def _stopping_now(self) -> bool:
        return self._stop_now is not None and self._stop_now.is_set()

    async def _wind_down(self, loops: list[asyncio.Task[None]]) -> None:
        """Stop taking work, then drain; the watcher keeps stopping cancelled
        handlers meanwhile."""
        self._stopping = True
        takers = loops[:-1]
        for task in takers:
            task.cancel()
        await asyncio.gather(*takers, return_exceptions=True)
        await self._drain()

    async def _drain(self) -> None:
        """Graceful stop: wait for handlers up to the grace period, then stop the
        rest; deregistering puts their tasks back at the front, oldest first."""
        assert self._stop_now is not None
        # Persistent handlers never end by themselves: ask them now, so they get
        # the grace period to clean up instead of being waited for in vain.
        self._cancel_all("shutdown", persistent_only=True)
        if (self._process_tasks or self._more_to_wait_for()) and not self._stop_now.is_set():
            logger.info("waiting up to %.1f s for handlers", self.settings.grace_period)
            await self._wait_processes(self.settings.grace_period, until_stop_now=True)
        self._cancel_all("shutdown")
        await self._wait_processes(CANCEL_WAIT)
        self._forget_unfinished()

    async def _wait_processes(self, timeout: float, *, until_stop_now: bool = False) -> None:
        pending = self._process_tasks | self._more_to_wait_for()
        if not pending:
            return
        waiters: set[asyncio.Future[Any]] = {
            asyncio.ensure_future(asyncio.wait(pending, timeout=timeout))
        }
        if until_stop_now:
            assert self._stop_now is not None
            waiters.add(asyncio.ensure_future(self._stop_now.wait()))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def _close(self, client: AsyncWorqr) -> None:
        try:
            await client.aclose()  # hands anything still held back to the front, deregisters
        except Exception as error:
            logger.warning("could not deregister cleanly (%s); peers will fail this worker", error)
        finally:
            leftovers = set(self._process_tasks)  # e.g. an ack retrying while Redis is away
            for task in leftovers:
                task.cancel()
            if leftovers:
                await asyncio.wait(leftovers, timeout=CANCEL_WAIT)
            self._shutdown_executor()
            try:
                await self._after_close()
            finally:
                self._loop = None
