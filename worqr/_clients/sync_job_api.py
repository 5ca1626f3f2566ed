# Generated from async_job_api.py by tools/unasync.py: do not edit; edit async_job_api.py
# and run `python tools/unasync.py` (make lint fails while this copy is stale).
"""The job methods of `AsyncWorqr` (`SyncApi` adds the task and mesh ones).

Written once, like ``async_api.py``: ``tools/unasync.py`` writes the synchronous
copy, ``sync_job_api.py``, for `Worqr`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from .._core.calls import Plan
from .._core.jobs_work import JobFinish
from .._core.limits import UNSET, Keep
from .._dedup import Dedup
from .._flows import FlowInfo, FlowJob, FlowRef, Step
from .._jobs import Backoff, JobInfo, JobProcess, JobRef
from .._schedules import ScheduleArgs, ScheduleInfo
from .shell import Shell

T = TypeVar("T")


class SyncJobApi(Shell):
    def _drive(self, plan: Plan[T], deadline: float | None = None) -> T:
        """Run ``plan`` against Redis; resend what is safe for ``deadline`` seconds
        (default `Settings.retry_deadline`; 0: never)."""
        raise NotImplementedError

    # -- jobs ------------------------------------------------------------------

    def submit(
        self,
        queue: str,
        payload: str | bytes,
        *,
        id: str | None = None,
        delay: float | None = None,
        at: float | None = None,
        priority: int = 0,
        unique: bool = False,
        retries: int | None = None,
        backoff: Backoff | float | None = None,
        timeout: float | None = None,
        result_ttl: float | None = None,
        group: str | None = None,
        dedup: Dedup | None = None,
    ) -> JobRef:
        """Create a job on ``queue`` (which becomes a job queue) and return its
        `JobRef`. ``id`` names it (default: a new time-sortable id); submitting an
        id that is live creates nothing (``duplicate=True``), one that is
        terminal starts it anew. ``unique``: at most one live job with this
        payload. ``delay`` seconds or ``at`` (epoch seconds, by Redis's clock):
        when it is due. ``priority``: higher runs first. ``retries``,
        ``backoff``, ``timeout``, ``result_ttl``: override the handler's and
        `JobSettings`' defaults for this job. ``group``: its fair-share group
        (the job-id rules): the take goes round robin between groups, one job of
        each per turn, each under its own limits (`configure_group`). ``dedup``:
        a `worqr.Dedup` key and mode (throttle, debounce, keep_last; not with
        ``id`` or ``unique``): a duplicate returns the key's job with
        ``duplicate=True``. Bad options raise `ValueError` or `TypeError` before
        anything is written."""
        refs = self._drive(
            self._core.submission.submit_many(
                queue,
                [payload],
                ids=[id],
                delay=delay,
                at=at,
                priority=priority,
                unique=unique,
                retries=retries,
                backoff=backoff,
                timeout=timeout,
                result_ttl=result_ttl,
                group=group,
                dedup=dedup,
            )
        )
        return refs[0]

    def submit_many(
        self,
        queue: str,
        payloads: Iterable[str | bytes],
        *,
        delay: float | None = None,
        at: float | None = None,
        priority: int = 0,
        unique: bool = False,
        retries: int | None = None,
        backoff: Backoff | float | None = None,
        timeout: float | None = None,
        result_ttl: float | None = None,
        group: str | None = None,
    ) -> list[JobRef]:
        """Create one job per payload, with the same options (as `submit`), in
        script calls of at most `JobSettings.submit_chunk` jobs; returns their
        `JobRef` in order. One bad payload or option creates none of them."""
        return self._drive(
            self._core.submission.submit_many(
                queue,
                payloads,
                delay=delay,
                at=at,
                priority=priority,
                unique=unique,
                retries=retries,
                backoff=backoff,
                timeout=timeout,
                result_ttl=result_ttl,
                group=group,
            )
        )

    def get_job(self, queue: str, id: str) -> JobInfo | None:
        """The job as it is now, or None when there is no such job (or it was
        purged). On a queue that holds tasks: `WrongQueueKindError`."""
        return self._drive(self._core.job_reads.get_job(queue, id))

    def get_job_log(self, queue: str, id: str, *, limit: int = 100) -> list[str] | None:
        """The newest ``limit`` lines (1 to 1,000) the job's handlers wrote with
        ``current_job().log(line)``, oldest first; None when there is no such job
        (or it was purged), as `get_job`."""
        return self._drive(self._core.job_logs.get_job_log(queue, id, limit))

    def result(self, queue: str, id: str, timeout: float | None = None) -> str | bytes | None:
        """The result of the job once it finished, waiting for it without polling
        Redis: up to ``timeout`` seconds (None: without limit; 0: read once), then
        `TimeoutError`. A failed job raises `JobFailedError`, a cancelled one
        `JobCancelledError`, an unknown or purged one `JobNotFoundError` (on a
        queue that holds tasks: `WrongQueueKindError`)."""
        return self._drive(self._core.job_reads.result(queue, id, timeout))

    def cancel_job(self, queue: str, id: str) -> bool:
        """Cancel a delayed, queued, retrying or active job (an active job's handler
        is stopped); False when it is already terminal or unknown. On a queue that
        holds tasks: `WrongQueueKindError`."""
        return self._drive(self._core.job_reads.cancel_job(queue, id))

    def retry_job(self, queue: str, id: str) -> bool:
        """Give a failed or cancelled job a new life, queued again (attempts kept);
        False otherwise, or when another live job holds its unique marker. On a
        queue that holds tasks: `WrongQueueKindError`."""
        return self._drive(self._core.job_reads.retry_job(queue, id))

    def update_job(
        self,
        queue: str,
        id: str,
        *,
        payload: str | bytes | Keep = UNSET,
        priority: int | Keep | None = UNSET,
        delay: float | Keep | None = UNSET,
        at: float | Keep | None = UNSET,
    ) -> bool:
        """Change a delayed, queued or retrying job: an option left out stays as
        it is (None: back to the default, priority 0 or due now). A new payload
        moves the job's unique marker with it; a queued job whose priority
        changes goes to the back of its new priority; ``delay`` seconds from
        now or ``at`` (epoch seconds, Redis's clock), not both, make it delayed,
        or queued when due. False, changing nothing, for an active, terminal,
        unknown or flow job, or when another live job holds the new payload's
        unique marker."""
        return self._drive(
            self._core.bulk.update_job(
                queue, id, payload=payload, priority=priority, delay=delay, at=at
            )
        )

    # -- bulk operations: bounded script calls, exact counts throughout ----------

    def cancel_jobs(
        self, queue: str, *, state: str | None = None, group: str | None = None
    ) -> int:
        """Cancel every job in ``state`` ("delayed", "queued", "retrying",
        "waiting", "active"; None: every job not terminal), of fair-share
        ``group`` only when given (None: every group), as `cancel_job` does
        (active ones' handlers are stopped, their finish fenced); how many. Jobs
        present when it began are cancelled, in chunks of 1,000 per script call;
        one that arrives meanwhile may be too."""
        return self._drive(self._core.bulk.cancel_jobs(queue, state=state, group=group))

    def retry_jobs(
        self, queue: str, *, state: str | None = None, limit: int | None = None
    ) -> int:
        """Give "failed" or "cancelled" jobs (None: both) a new life, queued
        again with their attempts kept, at most ``limit``; jobs whose unique
        payload another live job holds are left. How many."""
        return self._drive(self._core.bulk.retry_jobs(queue, state=state, limit=limit))

    def promote_jobs(self, queue: str, *, limit: int | None = None) -> int:
        """Queue delayed jobs now (soonest due first, at most ``limit``), waking
        idle workers for them; retrying jobs keep their backoff. How many."""
        return self._drive(self._core.bulk.promote_jobs(queue, limit=limit))

    def purge_jobs(
        self, queue: str, state: str, *, older_than: float = 0.0, limit: int | None = None
    ) -> int:
        """Forget at most ``limit`` records of terminal ``state`` ("finished",
        "failed", "cancelled") that ended ``older_than`` seconds ago or more, by
        Redis's clock; how many."""
        return self._drive(
            self._core.bulk.purge_jobs(queue, state, older_than=older_than, limit=limit)
        )

    def count_jobs(self, queue: str) -> dict[str, int]:
        """How many jobs ``queue`` holds in each state: delayed, queued, active,
        retrying, finished, failed, cancelled (exact; zeros included). On a queue
        that holds tasks: `WrongQueueKindError`."""
        return self._drive(self._core.job_reads.count_jobs(queue))

    def get_jobs(
        self,
        queue: str,
        state: str,
        *,
        limit: int = 100,
        cursor: str | None = None,
        group: str | None = None,
    ) -> tuple[list[JobInfo], str | None]:
        """One page of the jobs of ``queue`` in ``state``, and the cursor of the
        next page (None: the last). Queued jobs come in run order, the ungrouped
        ones first, then group by group (each job once over the pages);
        delayed and retrying ones by due time, terminal ones latest first; a
        page may be short. ``group``: that fair-share group's jobs only. On a
        queue that holds tasks: `WrongQueueKindError`."""
        return self._drive(
            self._core.job_reads.get_jobs(queue, state, limit=limit, cursor=cursor, group=group)
        )

    def server_time(self) -> float:
        """Redis's clock, in epoch seconds: what ``at`` and every job time are read against."""
        return self._drive(self._core.job_reads.server_time())

    # -- schedules -------------------------------------------------------------

    def schedule(
        self,
        queue: str,
        name: str,
        *,
        cron: str | None = None,
        every: float | None = None,
        tz: str = "UTC",
        payload: str | bytes = "",
        overlap: bool = True,
        **job_options: Any,
    ) -> ScheduleInfo:
        """Create or replace the schedule ``name`` of ``queue`` (which becomes a
        job queue): a job with ``payload`` at each fire time of ``cron`` (a
        5-field expression, read in ``tz``, an IANA zone; needs ``worqr[cron]``)
        or every ``every`` seconds from now. Each fire creates job
        ``cron:<name>:<fire ms>`` once, however many workers and producers run
        the schedule; the members of the queue fire it (none while it has no
        members: then it fires once when one comes back). ``overlap=False``
        skips a fire while the previous fire's job is live. ``job_options``:
        ``priority``, ``retries``, ``backoff``, ``timeout``, ``result_ttl`` of
        its jobs. An equal spec changes nothing (declare it anywhere, any
        number of times); a changed one replaces it. Bad arguments raise
        `ValueError` or `TypeError` before anything is written."""
        return self._drive(
            self._core.schedules.schedule(
                queue, name, ScheduleArgs(cron, every, tz, payload, overlap, job_options)
            )
        )

    def unschedule(self, queue: str, name: str) -> bool:
        """Remove the schedule ``name`` of ``queue`` (jobs it created stay);
        False when there was none."""
        return self._drive(self._core.schedules.unschedule(queue, name))

    def get_schedules(self, queue: str) -> list[ScheduleInfo]:
        """The schedules of ``queue``, by name, with their next fire time (Redis
        server seconds)."""
        return self._drive(self._core.schedules.get_schedules(queue))

    def pause_schedule(self, queue: str, name: str) -> bool:
        """Pause the schedule ``name`` of ``queue``: it fires nothing until
        `resume_schedule`, and declaring it again (as every worker does at start)
        keeps it paused. False when there is no such schedule."""
        return self._drive(self._core.pausing.pause_schedule(queue, name))

    def resume_schedule(self, queue: str, name: str) -> bool:
        """Let a paused schedule fire again: the fire times it missed while
        paused give one job at most, then it goes on from there. False when
        there is no such schedule."""
        return self._drive(self._core.pausing.resume_schedule(queue, name))

    # -- flows -------------------------------------------------------------------

    def submit_chain(self, steps: Sequence[Step]) -> FlowRef:
        """Run ``steps`` one after another, each a job on its own queue (any
        queues, on any masters of a cluster): a step without a payload receives
        the previous step's result. A step that fails (after its retries) ends
        the chain, failed. Step ``k`` of chain ``C`` has the id ``C.k``. An empty
        chain, a bad queue name or bad job options raise `ValueError` or
        `TypeError` before anything is written."""
        return self._drive(self._core.flows.submit_chain(steps))

    def submit_flow(self, root: FlowJob) -> FlowRef:
        """Run a tree of jobs: each `FlowJob` runs once all its children ended,
        as its ``on_child_failure`` says; children of ``R`` are ``R.0``,
        ``R.1``, ... `current_job().children()` gives a parent their results."""
        return self._drive(self._core.flows.submit_flow(root))

    def get_flow(self, id: str) -> FlowInfo:
        """The flow's state and jobs; `JobNotFoundError` for an unknown id (or
        one forgotten after its retention)."""
        return self._drive(self._core.flows.get_flow(id))

    def cancel_flow(self, id: str) -> bool:
        """Cancel every job of the flow that is not terminal, and the steps and
        children not created yet; False when there is no such running flow."""
        return self._drive(self._core.flows.cancel_flow(id))

    def relay(self, queue: str | None = None) -> int:
        """Apply the flow hops waiting in the outbox of ``queue`` (of every job
        queue when None) now; how many were applied. Workers do this on their
        own (at once after a hop, and for stragglers every relay lease)."""
        return self._drive(self._core.relay.relay(queue))


class SyncInternals:
    """What worqr's own layers above the clients (the worker runtime, the HTTP
    API, the command line) use of a client beyond its public methods, under
    names of their own: ``client.internals``. Not API: it changes with them.
    ``core`` is the client's `Core`, whose plans the lanes of an all-sync
    worker drive on connections of their own."""

    def __init__(self, client: SyncJobApi) -> None:
        self.core = client._core
        self._drive = client._drive

    def record_history(self, queue: str, tallies: list[tuple[int, str]]) -> float:
        """Add a worker's tallies to the queue's metrics history; Redis's clock."""
        return self._drive(self.core.history.record(queue, tallies))

    def server_time(self) -> float:
        """Redis's clock, in epoch seconds."""
        return self._drive(self.core.history.server_time())

    def queue_kind(self, queue: str) -> str:
        """ "jobs" or "tasks", as the queue's config says (tasks when unknown)."""
        return self._drive(self.core.kinds.of(queue))

    def job_counts(self, queue: str) -> dict[str, int]:
        """`count_jobs`, and "overdue": due jobs not yet promoted."""
        return self._drive(self.core.job_reads.job_counts(queue))

    def group_defaults(self, queue: str) -> tuple[tuple[int, float] | None, int | None]:
        """The queue's ``group_rate`` and ``group_max_active`` (`configure_queue`)."""
        return self._drive(self.core.groups.group_defaults(queue))

    def mark_job_queue(self, queue: str) -> None:
        """Make ``queue`` a job queue (`WrongQueueKindError` if it holds tasks)."""
        self._drive(self.core.job_work.mark_job_queue(queue))

    def take_jobs(
        self, queue: str, finished: list[JobFinish], count: int, *, full: bool = False
    ) -> tuple[list[bool], list[JobProcess], bool]:
        """Finish ``finished`` and take up to ``count`` jobs; ``full``: no room
        for more (`JobWork.take_jobs`)."""
        return self._drive(self.core.job_work.take_jobs(queue, finished, count, full=full))

    def fail_job(
        self, process: JobProcess, *, mode: str, delay: float, retries: int, error: str
    ) -> tuple[bool, str]:
        """Report a failed attempt, or fail the job now (`JobWork.fail_job`)."""
        return self._drive(
            self.core.job_work.fail_job(
                process, mode=mode, delay=delay, retries=retries, error=error
            )
        )

    def stop_job(self, process: JobProcess) -> bool:
        """Put a job back at the front of its priority; False: fenced."""
        return self._drive(self.core.job_work.stop_job(process))

    def report_progress(self, process: JobProcess, value: bytes) -> bool:
        return self._drive(self.core.job_work.report_progress(process, value))

    def append_job_log(self, process: JobProcess, lines: Sequence[bytes]) -> bool:
        return self._drive(self.core.job_logs.append(process, lines))

    def promote_due(self, queue: str) -> int:
        """Make the due delayed and retrying jobs ready now; how many."""
        return self._drive(self.core.job_work.promote_due(queue))
