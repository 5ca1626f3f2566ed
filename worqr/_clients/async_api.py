"""The public methods of `AsyncWorqr`: each runs one plan of the core.

``async_api.py`` is the one source of the client API: ``tools/unasync.py`` writes the
synchronous copy, ``sync_api.py``, for `Worqr` (same names, signatures and
docstrings, without ``async``/``await``), and ``make lint`` fails when that copy
is stale. Docstrings are written for both clients: with `AsyncWorqr` every
method is awaited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TypeVar

from .._core import Callback
from .._core.calls import Plan
from .._core.jobs_work import JobFinish
from .._jobs import Backoff, JobInfo, JobProcess, JobRef
from .._process import Process
from .shell import Shell

T = TypeVar("T")


class AsyncApi(Shell):
    _start_lock: asyncio.Lock

    async def _drive(self, plan: Plan[T], deadline: float | None = None) -> T:
        """Run ``plan`` against Redis; resend what is safe for ``deadline`` seconds
        (default `Settings.retry_deadline`; 0: never)."""
        raise NotImplementedError

    def _start_heartbeat(self) -> None:
        """Start the background heartbeat (after the first registration)."""
        raise NotImplementedError

    # -- producing -------------------------------------------------------------

    async def enqueue(self, queue: str, task: str | bytes) -> None:
        """Add one task (``str`` or ``bytes``) to the back of ``queue``."""
        await self._drive(self._core.enqueue_many(queue, [task]))

    async def enqueue_many(self, queue: str, tasks: Iterable[str | bytes]) -> int:
        """Add tasks to the back of ``queue`` in order, in batched script calls;
        returns how many. One bad task writes none of them."""
        return await self._drive(self._core.enqueue_many(queue, tasks))

    async def cancel_tasks(self, queue: str, task: str | bytes) -> int:
        """Cancel every copy of ``task``: queued copies are removed, in-process
        copies end and their workers are told. Returns how many copies."""
        return await self._drive(self._core.cancel_tasks(queue, task))

    async def delete_queue(self, queue: str) -> None:
        """Drop ``queue`` with its tasks, processes and dead letters; listeners
        get "delete" and in-process copies are fenced."""
        await self._drive(self._core.delete_queue(queue))

    async def configure_queue(self, queue: str, *, max_recoveries: int | None) -> None:
        """Per-queue options shared by the mesh: ``max_recoveries`` overrides
        `Settings.max_recoveries` for ``queue`` (-1: never dead-letter, for
        persistent tasks; None: remove the override)."""
        await self._drive(self._core.configure_queue(queue, max_recoveries=max_recoveries))

    # -- reading ---------------------------------------------------------------

    async def get_queues(self) -> list[str]:
        """The mesh's known queues, sorted."""
        return await self._drive(self._core.get_queues())

    async def get_workers(self) -> list[str]:
        """The registered workers' ids, sorted (the dead ones until peers fail them)."""
        return await self._drive(self._core.get_workers())

    async def get_working_queues(self, worker_id: str | None = None) -> list[str]:
        """The queues ``worker_id`` works on (default: this client's worker)."""
        return await self._drive(self._core.get_working_queues(worker_id))

    async def get_worker_info(self, worker_id: str) -> dict[str, str]:
        """A worker's host, pid and start time, as it registered them."""
        return await self._drive(self._core.get_worker_info(worker_id))

    async def count_tasks(self, queue: str) -> int:
        """Tasks queued on ``queue``."""
        return await self._drive(self._core.count_tasks(queue))

    async def count_processes(self, queue: str) -> int:
        """Processes of ``queue`` in flight on any worker."""
        return await self._drive(self._core.count_processes(queue))

    async def count_failed(self, queue: str) -> int:
        """Dead letters of ``queue``."""
        return await self._drive(self._core.count_failed(queue))

    async def get_failed(self, queue: str) -> list[str | bytes]:
        """The dead letters of ``queue``, newest first."""
        return await self._drive(self._core.get_failed(queue))

    async def get_stats(self, queue: str) -> dict[str, int]:
        """Lifetime counters of ``queue`` by event: enqueued, dequeued, finished,
        stopped, released, recovered, dead_lettered, failed, cancelled, redriven."""
        return await self._drive(self._core.get_stats(queue))

    async def workers_alive(self, worker_ids: Iterable[str]) -> list[bool]:
        """Whether each worker's lease currently exists."""
        return await self._drive(self._core.workers_alive(worker_ids))

    async def count_worker_processes(self, queue: str, worker_id: str) -> int:
        """Processes ``worker_id`` holds on ``queue``."""
        return await self._drive(self._core.count_worker_processes(queue, worker_id))

    async def requeue_failed(self, queue: str) -> int:
        """Move the dead letters of ``queue`` to its back, oldest first, one atomic
        move each; returns how many."""
        return await self._drive(self._core.requeue_failed(queue))

    async def purge_failed(self, queue: str) -> int:
        """Drop the dead letters of ``queue``; returns how many."""
        return await self._drive(self._core.purge_failed(queue))

    # -- working ---------------------------------------------------------------

    async def start_worker(self) -> str:
        """Register in the mesh and start the heartbeat and peer supervision;
        returns the worker id (the same one when called again)."""
        async with self._start_lock:
            if self._core.worker_id is not None:
                return self._core.worker_id
            worker = await self._drive(self._core.start_worker())
            self._start_heartbeat()
            return worker

    async def start_work(self, queue: str) -> None:
        """Join ``queue``: dequeue from it and hear its wake-ups."""
        await self._drive(self._core.start_work(queue))

    async def stop_work(self, queue: str) -> None:
        """Stop working on ``queue``; its processes go back to the front."""
        await self._drive(self._core.stop_work(queue))

    async def on(self, queue: str, callback: Callback) -> None:
        """Call ``callback(event, message)`` for "work" (a hint of how many tasks
        arrived), "cancel" (process ids) and "delete" (None). With `AsyncWorqr`
        the callback may be a coroutine function."""
        await self._drive(self._core.on(queue, callback))

    async def dequeue(self, queue: str) -> Process | None:
        """Take the task at the front of ``queue`` as a process, or None when it
        is empty (joins the queue if needed)."""
        taken = await self._drive(self._core.dequeue(queue, 1))
        return taken[0] if taken else None

    async def dequeue_many(self, queue: str, count: int) -> list[Process]:
        """Take up to ``count`` tasks from the front of ``queue``; a large count
        runs as script calls of at most 500 tasks each."""
        return await self._drive(self._core.dequeue(queue, count))

    async def finish_process(self, process: str | Process) -> bool:
        """End a process; False if it no longer exists (fenced: its worker was
        failed, or it was cancelled or deleted)."""
        return await self._drive(self._core.finish_process(process))

    async def complete(
        self, queue: str, finished: Iterable[str | Process], count: int = 0
    ) -> tuple[list[bool], list[Process]]:
        """Finish processes of ``queue`` and take up to ``count`` more tasks from its
        front, in one script call. Returns a flag per finished process (False: it no
        longer existed, as `finish_process`) and the new processes."""
        return await self._drive(self._core.complete(queue, finished, count))

    async def stop_process(self, process: str | Process) -> bool:
        """End a process and put its task back at the front of its queue; False
        if it no longer exists."""
        return await self._drive(self._core.stop_process(process))

    async def fail_process(self, process: str | Process) -> bool:
        """Dead-letter a process whose task failed; False if it no longer exists."""
        return await self._drive(self._core.fail_process(process))

    async def processes_exist(self, queue: str, pids: Iterable[str]) -> list[bool]:
        """Whether each process still exists (not finished, cancelled or failed over)."""
        return await self._drive(self._core.processes_exist(queue, pids))

    async def fail_worker(self) -> int:
        """Return every process of this worker to the front of its queue; the
        worker stays registered. Returns how many."""
        return await self._drive(self._core.fail_worker())

    async def reconcile(self) -> int:
        """Return to the front the processes Redis says this worker holds but this
        client no longer runs (acknowledgements Redis lost, e.g. in a failover);
        heartbeats do it after an outage. Returns how many."""
        return await self._drive(self._core.reconcile())

    async def reap(self) -> int:
        """Fail every dead worker now; returns how many (peers also do it on their
        own, once per interval for the whole mesh)."""
        return await self._drive(self._core.reap())

    async def heartbeat(self) -> str:
        """Run one heartbeat now (the background loop does it every interval):
        "ok", "reaped", "recovered" (the lease was lost; re-registered) or
        "leaving"."""
        return await self._drive(self._core.heartbeat(), deadline=0)

    # -- jobs ------------------------------------------------------------------

    async def submit(
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
    ) -> JobRef:
        """Create a job on ``queue`` (which becomes a job queue) and return its
        `JobRef`. ``id`` names it (default: a new time-sortable id); submitting an
        id that is live creates nothing (``duplicate=True``), one that is
        terminal starts it anew. ``unique``: at most one live job with this
        payload. ``delay`` seconds or ``at`` (epoch seconds, by Redis's clock):
        when it is due. ``priority``: higher runs first. ``retries``,
        ``backoff``, ``timeout``, ``result_ttl``: override the handler's and
        `JobSettings`' defaults for this job. Bad options raise `ValueError` or
        `TypeError` before anything is written."""
        refs = await self._drive(
            self._core.submit_many(
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
            )
        )
        return refs[0]

    async def submit_many(
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
    ) -> list[JobRef]:
        """Create one job per payload, with the same options (as `submit`), in
        script calls of at most `JobSettings.submit_chunk` jobs; returns their
        `JobRef` in order. One bad payload or option creates none of them."""
        return await self._drive(
            self._core.submit_many(
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
            )
        )

    async def get_job(self, queue: str, id: str) -> JobInfo | None:
        """The job as it is now, or None when there is no such job (or it was purged)."""
        return await self._drive(self._core.get_job(queue, id))

    async def result(self, queue: str, id: str, timeout: float | None = None) -> str | bytes | None:
        """The result of the job once it finished, waiting for it without polling
        Redis: up to ``timeout`` seconds (None: without limit; 0: read once), then
        `TimeoutError`. A failed job raises `JobFailedError`, a cancelled one
        `JobCancelledError`, an unknown or purged one `JobNotFoundError`."""
        return await self._drive(self._core.result(queue, id, timeout))

    async def cancel_job(self, queue: str, id: str) -> bool:
        """Cancel a delayed, queued, retrying or active job (an active job's handler
        is stopped); False when it is already terminal or unknown."""
        return await self._drive(self._core.cancel_job(queue, id))

    async def retry_job(self, queue: str, id: str) -> bool:
        """Give a failed or cancelled job a new life, queued again (attempts kept);
        False otherwise, or when another live job holds its unique marker."""
        return await self._drive(self._core.retry_job(queue, id))

    async def count_jobs(self, queue: str) -> dict[str, int]:
        """How many jobs ``queue`` holds in each state: delayed, queued, active,
        retrying, finished, failed, cancelled (exact; zeros included)."""
        return await self._drive(self._core.count_jobs(queue))

    async def get_jobs(
        self, queue: str, state: str, *, limit: int = 100, cursor: str | None = None
    ) -> tuple[list[JobInfo], str | None]:
        """One page of the jobs of ``queue`` in ``state``, and the cursor of the
        next page (None: the last). Queued jobs come in run order, delayed and
        retrying ones by due time, terminal ones latest first; a page may be short."""
        return await self._drive(self._core.get_jobs(queue, state, limit=limit, cursor=cursor))

    async def server_time(self) -> float:
        """Redis's clock, in epoch seconds: what ``at`` and every job time are read against."""
        return await self._drive(self._core.server_time())

    async def _queue_kind(self, queue: str) -> str:  # for the command line
        return await self._drive(self._core.kind_of(queue))

    async def _job_counts(self, queue: str) -> dict[str, int]:  # count_jobs and "overdue"
        return await self._drive(self._core.job_counts(queue))

    # -- for the worker runtime (not public) -------------------------------------

    async def _mark_job_queue(self, queue: str) -> None:
        await self._drive(self._core.mark_job_queue(queue))

    async def _take_jobs(
        self, queue: str, finished: list[JobFinish], count: int
    ) -> tuple[list[bool], list[JobProcess], bool]:
        return await self._drive(self._core.take_jobs(queue, finished, count))

    async def _fail_job(
        self, process: JobProcess, *, mode: str, delay: float, retries: int, error: str
    ) -> tuple[bool, str]:
        return await self._drive(
            self._core.fail_job(process, mode=mode, delay=delay, retries=retries, error=error)
        )

    async def _stop_job(self, process: JobProcess) -> bool:
        return await self._drive(self._core.stop_job(process))

    async def _report_progress(self, process: JobProcess, value: bytes) -> bool:
        return await self._drive(self._core.report_progress(process, value))

    async def _promote_jobs(self, queue: str) -> int:
        return await self._drive(self._core.promote_jobs(queue))
