"""The script calls of lanes (`lanes`): a take that carries finishes, and a
finish sent alone, through the core's plans on a lane's sync connection."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from .._clients.sync_exec import SyncExecutor
from .._core import Core
from .._jobs import JobProcess
from .._process import Process
from .dispatch import Dispatcher

logger = logging.getLogger("worqr.worker")

Finish = tuple[Process, float, str, bytes]
"""A plain finish a lane carries into a take: the process, its seconds, its result."""


class LaneCalls:
    """What lanes send, and what they hand to the worker's ``loop`` (finishes
    that did not land are resent there until Redis answers)."""

    def __init__(
        self,
        core: Core,
        executor: SyncExecutor,
        job_queues: frozenset[str],
        dispatch: Dispatcher,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._core = core
        self._executor = executor
        self._job_queues = job_queues
        self._dispatch = dispatch
        self._loop = loop

    def take(
        self, queue: str, finishes: list[Finish], count: int
    ) -> tuple[list[bool], list[Process], bool]:
        """A lane's take step, carrying ``finishes``; it asks for nothing
        (``count`` 0) only with no room: at its concurrency, or stopping."""
        return self._call(queue, finishes, count, full=count == 0)

    def _call(
        self, queue: str, finishes: list[Finish], count: int, *, full: bool
    ) -> tuple[list[bool], list[Process], bool]:
        drive, core = self._executor.drive, self._core
        if queue in self._job_queues:
            jobs: list[tuple[JobProcess, str, bytes]] = []
            for process, _, kind, data in finishes:
                assert isinstance(process, JobProcess)
                jobs.append((process, kind, data))
            accepted, taken, more = drive(core.job_work.take_jobs(queue, jobs, count, full=full))
            return accepted, list(taken), more
        if not finishes:
            return [], drive(core.processes.dequeue(queue, count)), False
        ended = [finish[0] for finish in finishes]
        accepted, processes = drive(core.processes.complete(queue, ended, count))
        return accepted, processes, False

    def finish_alone(self, finishes: list[Finish]) -> None:
        """Finish without a take (the lane took from another queue: the worker
        may have room, so it keeps the wake-up its last take asked for); when
        Redis does not answer, the loop resends them."""
        try:
            accepted, _, _ = self._call(finishes[0][0].queue, finishes, 0, full=False)
        except Exception:
            for finish in finishes:
                self.to_loop(self._dispatch.finish_alone, *finish)
            return
        self.report(finishes, accepted)

    def resend(self, finishes: list[Finish]) -> None:
        """Finishes a refused take carried: the loop resends each alone."""
        for finish in finishes:
            self.to_loop(self._dispatch.finish_alone, *finish)

    def report(self, finishes: list[Finish], accepted: list[bool]) -> None:
        report = self._dispatch.acks.report_finish
        for (process, seconds, _, _), ok in zip(finishes, accepted, strict=True):
            report(process, seconds, ok)

    def to_loop(self, function: Callable[..., Any], *args: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(function, *args)
        except RuntimeError:  # the loop closed: deregistering gave the task back
            logger.debug("worker loop closed; %s dropped", getattr(function, "__name__", function))

    def close(self) -> None:
        self._executor.redis.close()

    def close_after(self, lanes: list[threading.Thread]) -> None:
        """Close the connection once ``lanes`` have exited, from a thread of its
        own: a take in flight as the worker stops ends normally instead of
        failing on a connection closed under it."""

        def close() -> None:
            for lane in lanes:
                lane.join()
            self.close()

        threading.Thread(target=close, name="worqr-lanes-close", daemon=True).start()
