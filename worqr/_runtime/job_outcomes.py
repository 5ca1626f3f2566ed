"""What a job handler's end does to its job (`Dispatcher` defers to it for
the processes of job queues), its progress reports, and its timeout.

- returns ``str``, ``bytes`` or None: finished, that value stored (with the
  queue's next take); any other value, or one over `max_result_bytes`: failed
  now, since the same value would come back;
- raises `worqr.Fail`: failed now, no retry;
- raises `worqr.RateLimited`: delayed (no failure charged, its attempt given
  back) and its queue shut for as long;
- raises anything else, `worqr.Retry` included, or runs past its timeout: a
  failure, retried after its backoff (or the `Retry`'s delay) while its failures
  are within its retries, then failed;
- cancelled, lease lost, stale lease, shutdown: as for tasks (the job goes back
  to the front with no failure charged, or was cancelled, or is a peer's).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from .._clients.async_client import AsyncWorqr
from .._hooks import Hooks
from .._jobs import Backoff, JobProcess, JobSettings, backoff_delay, error_text
from .acks import Acknowledger
from .context import RateLimited
from .job_context import Fail
from .job_log_sender import JobLogSender
from .running import HandlerSpec, Outcome, Running

logger = logging.getLogger("worqr.worker")

PROGRESS_EVERY = 0.1  # seconds: at most about one progress write per job per interval


class JobOutcomes:
    def __init__(
        self,
        client: AsyncWorqr,
        *,
        settings: JobSettings,
        acks: Acknowledger,
        hooks: Hooks,
        track: Callable[[asyncio.Future[Any]], None],
    ) -> None:
        self.client = client
        self.settings = settings
        self.acks = acks
        self.hooks = hooks
        self._track = track
        self._progress: dict[str, bytes] = {}  # pid -> the last value not yet sent
        self._sending: dict[str, asyncio.Task[None]] = {}  # pid -> its progress writer
        self.logs = JobLogSender(client, track)

    # -- policy --------------------------------------------------------------------

    def retries(self, process: JobProcess, spec: HandlerSpec) -> int:
        for value in (process.retries, spec.retries):
            if value is not None:
                return int(value)
        return self.settings.retries

    def backoff(self, process: JobProcess, spec: HandlerSpec) -> Backoff | float:
        for value in (process.backoff, spec.backoff):
            if value is not None:
                return value
        return self.settings.backoff

    def timeout(self, process: JobProcess, spec: HandlerSpec) -> float | None:
        for value in (process.timeout, spec.timeout):
            if value is not None:
                return float(value)
        return self.settings.timeout

    # -- results -------------------------------------------------------------------

    def stored(self, value: object) -> tuple[str, bytes]:
        """A handler's return value as stored: its type flag and bytes; raises
        `TypeError`/`ValueError` for a value that cannot be a result."""
        if value is None:
            return "n", b""
        if isinstance(value, str):
            data, kind = value.encode("utf-8", "surrogateescape"), "s"
        elif isinstance(value, bytes | bytearray | memoryview):
            data, kind = bytes(value), "b"
        else:
            raise TypeError(
                f"a job handler must return str, bytes or None, not {type(value).__name__}"
            )
        if len(data) > self.settings.max_result_bytes:
            raise ValueError(
                f"the result is {len(data)} bytes; the limit is "
                f"{self.settings.max_result_bytes} (JobSettings.max_result_bytes)"
            )
        return kind, data

    # -- progress ------------------------------------------------------------------

    def report(self, loop: asyncio.AbstractEventLoop, process: JobProcess, value: bytes) -> None:
        """From the handler (any thread): keep the value; a writer sends it."""
        loop.call_soon_threadsafe(self._arrived, process, value)

    def _arrived(self, process: JobProcess, value: bytes) -> None:
        self._progress[process.id] = value
        if process.id not in self._sending:
            task = asyncio.create_task(self._send_progress(process))
            self._sending[process.id] = task
            self._track(task)

    async def _send_progress(self, process: JobProcess) -> None:
        try:
            while (value := self._progress.pop(process.id, None)) is not None:
                try:
                    await self.client.internals.report_progress(process, value)
                except Exception as error:  # a lost report is only a report
                    logger.debug("progress of job %s not stored: %s", process.job_id, error)
                if process.id in self._progress:
                    await asyncio.sleep(PROGRESS_EVERY)
        finally:
            self._sending.pop(process.id, None)

    async def progress_sent(self, process: JobProcess) -> None:
        """Wait until the last progress value and log lines are written (before
        the outcome)."""
        task = self._sending.get(process.id)
        if task is not None:
            await asyncio.wait({task})
        await self.logs.sent(process)

    def has_progress(self, process: JobProcess) -> bool:
        return process.id in self._sending or self.logs.sending(process)

    # -- outcomes ------------------------------------------------------------------

    async def settle(self, running: Running, outcome: Outcome, error: BaseException | None) -> None:
        """Acknowledge how a job's handler ended (not the plain finish, which rides
        on the next take: see `Dispatcher`)."""
        process = running.process
        assert isinstance(process, JobProcess)
        queue, seconds, hooks, acks, client = (
            process.queue,
            running.seconds(),
            self.hooks,
            self.acks,
            self.client,
        )
        await self.progress_sent(process)
        if outcome is Outcome.LEASE_LOST:
            hooks.on_fenced(queue)
            hooks.on_job_run_ended(process, "fenced", seconds, None)
        elif outcome is Outcome.SHUTDOWN:
            hooks.on_retried(queue)  # deregistering returns it to the front
            hooks.on_job_run_ended(process, "returned", seconds, None)
        elif outcome is Outcome.CANCELLED:
            await acks.run(
                lambda: client.internals.stop_job(process), False
            )  # gone already: forget it
            hooks.on_cancelled(queue)
            hooks.on_job_run_ended(process, "cancelled", seconds, None)
        elif outcome is Outcome.RETURNED:
            if await acks.run(lambda: client.internals.stop_job(process), False):
                hooks.on_retried(queue)
                hooks.on_job_run_ended(process, "returned", seconds, None)
            else:
                hooks.on_fenced(queue)
                hooks.on_job_run_ended(process, "fenced", seconds, None)
        elif outcome is Outcome.FINISHED:  # while stopping: no take to carry it
            await self._finish_with_result(running, seconds)
        else:
            mode, reason = self._failure(process, running.spec, outcome, error)
            await self.fail(running, mode, reason, seconds)

    async def _finish_with_result(self, running: Running, seconds: float) -> None:
        """Store the result of a job's handler that returned; one it cannot store
        fails the job now."""
        try:
            kind, data = self.stored(running.inner.result() if running.inner else None)
        except (TypeError, ValueError) as invalid:
            await self.fail(running, "fail", invalid, seconds)
        else:
            await self.acks.finish(running.process, seconds, kind, data)

    def _failure(
        self, process: JobProcess, spec: HandlerSpec, outcome: Outcome, error: BaseException | None
    ) -> tuple[str, BaseException | None]:
        """How a failed attempt is reported (`fail`'s ``mode``), and its error."""
        if outcome is Outcome.FAILED_NOW:
            return "fail", error
        if outcome is Outcome.TIMED_OUT:
            limit = self.timeout(process, spec) or 0.0
            return "error", TimeoutError(f"ran past {limit:g} s")
        if isinstance(error, RateLimited):  # not a failure: delayed, queue shut as long
            return "limited", error
        return "error", error  # FAILED, RETRIED

    async def fail(
        self, running: Running, mode: str, error: BaseException | None, seconds: float
    ) -> None:
        """Report a failed attempt (``mode`` "error": retried per its policy) or a
        failure now ("fail"), and tell the hooks which it became."""
        process = running.process
        assert isinstance(process, JobProcess)
        spec, queue = running.spec, process.queue
        delay = getattr(error, "delay", None)
        if delay is None:
            delay = backoff_delay(self.backoff(process, spec), process.failures + 1)
        text = error_text(error) if error is not None else "Error"

        async def report() -> tuple[bool, str]:
            return await self.client.internals.fail_job(
                process,
                mode=mode,
                delay=delay,
                retries=self.retries(process, spec),
                error=text,
            )

        accepted, state = await self.acks.run(report, (False, ""))
        hooks = self.hooks
        if not accepted:
            hooks.on_fenced(queue)
            hooks.on_job_run_ended(process, "fenced", seconds, None)
            return
        if state == "d":  # RateLimited
            hooks.on_retried(queue)
            hooks.on_job_run_ended(process, "rate_limited", seconds, error)
            logger.info(
                "job %s of queue %r is rate limited: back in %.2g s, the queue shut as long",
                process.job_id,
                queue,
                delay,
            )
            return
        if state == "r":
            hooks.on_retried(queue)
            hooks.on_job_run_ended(process, "retried", seconds, error)
            logger.warning(
                "job %s of queue %r failed (attempt %d), retrying in %.2g s: %s",
                process.job_id,
                queue,
                process.attempt,
                delay,
                text,
            )
            return
        hooks.on_failed(queue, seconds)
        hooks.on_job_run_ended(process, "failed", seconds, error)
        # A deliberate Fail needs no traceback; an unexpected error ends with one.
        unexpected = error is not None and not isinstance(error, Fail | TimeoutError)
        logger.error(
            "job %s of queue %r failed for good: %s",
            process.job_id,
            queue,
            text,
            exc_info=error if unexpected else None,
        )
