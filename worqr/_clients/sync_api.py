# Generated from async_api.py by tools/unasync.py: do not edit; edit async_api.py
# and run `python tools/unasync.py` (make lint fails while this copy is stale).
"""The public methods of `Worqr`: each runs one plan of the core.

``async_api.py`` (with ``async_job_api.py``, the job methods) is the one source of
the client API: ``tools/unasync.py`` writes the synchronous copies, ``sync_api.py``
and ``sync_job_api.py``, for `Worqr` (same names, signatures and
docstrings, without ``async``/``await``), and ``make lint`` fails when that copy
is stale. Docstrings are written for both clients: with `AsyncWorqr` every
method is awaited.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from .._core import Callback
from .._core.groups import GroupInfo
from .._core.history_model import HistoryPoint
from .._core.limits import UNSET, Keep, QueueLimits
from .._process import Process
from .sync_job_api import SyncJobApi


class SyncApi(SyncJobApi):
    _start_lock: threading.Lock

    def _start_heartbeat(self) -> None:
        """Start the background heartbeat (after the first registration)."""
        raise NotImplementedError

    # -- producing -------------------------------------------------------------

    def enqueue(self, queue: str, task: str | bytes) -> None:
        """Add one task (``str`` or ``bytes``) to the back of ``queue``."""
        self._drive(self._core.producing.enqueue_many(queue, [task]))

    def enqueue_many(self, queue: str, tasks: Iterable[str | bytes]) -> int:
        """Add tasks to the back of ``queue`` in order, in batched script calls;
        returns how many. One bad task writes none of them."""
        return self._drive(self._core.producing.enqueue_many(queue, tasks))

    def cancel_tasks(self, queue: str, task: str | bytes) -> int:
        """Cancel every copy of ``task``: queued copies are removed, in-process
        copies end and their workers are told. Returns how many copies."""
        return self._drive(self._core.producing.cancel_tasks(queue, task))

    def delete_queue(self, queue: str, *, if_idle: bool = False) -> None:
        """Drop ``queue`` with its tasks, processes and dead letters; listeners
        get "delete" and in-process copies are fenced. ``if_idle``: while a job
        (or task) is in process, delete nothing and raise `QueueBusyError`."""
        self._drive(self._core.deletion.delete_queue(queue, if_idle=if_idle))

    def configure_queue(
        self,
        queue: str,
        *,
        max_recoveries: int | Keep | None = UNSET,
        rate: tuple[int, float] | Keep | None = UNSET,
        max_active: int | Keep | None = UNSET,
        group_rate: tuple[int, float] | Keep | None = UNSET,
        group_max_active: int | Keep | None = UNSET,
    ) -> None:
        """Per-queue options shared by the mesh; one not given stays as it is,
        None removes it. Every argument is checked before anything is written.

        ``max_recoveries`` overrides `Settings.max_recoveries` for ``queue`` (-1:
        never dead-letter, for persistent tasks). On a job queue (a new queue
        becomes one; a queue holding tasks raises `WrongQueueKindError`):
        ``rate=(n, seconds)`` lets at most ``n`` jobs start in any ``seconds``,
        spaced ``seconds / n`` apart on Redis's clock, across every worker and
        host; ``max_active=n`` caps its active jobs. Both are enforced in the take
        script; when the queue opens again one idle worker is woken.
        ``group_rate`` and ``group_max_active``: the same for each fair-share
        group of the queue, the defaults `configure_group` overrides."""
        self._drive(
            self._core.limits.configure_queue(
                queue,
                max_recoveries=max_recoveries,
                rate=rate,
                max_active=max_active,
                group_rate=group_rate,
                group_max_active=group_max_active,
            )
        )

    def configure_group(
        self,
        queue: str,
        group: str,
        *,
        rate: tuple[int, float] | Keep | None = UNSET,
        max_active: int | Keep | None = UNSET,
    ) -> None:
        """One fair-share group's own ``rate`` and ``max_active``, in force over
        the queue's ``group_rate`` and ``group_max_active``; one not given stays,
        None removes it. A group at its cap or waiting for its rate is skipped
        by the take without delaying the others."""
        self._drive(
            self._core.groups.configure_group(queue, group, rate=rate, max_active=max_active)
        )

    def get_groups(
        self, queue: str, *, limit: int = 100, cursor: str | None = None
    ) -> tuple[list[GroupInfo], str | None]:
        """A page of the queue's groups (those with waiting or active jobs,
        limits of their own or a pause) and the cursor of the next page (None:
        the last)."""
        return self._drive(self._core.groups.get_groups(queue, limit=limit, cursor=cursor))

    def get_limits(self, queue: str, *, group: str | None = None) -> QueueLimits:
        """A job queue's rate and cap, its active jobs, and until when the rate
        (or a handler's `RateLimited`) keeps it closed now; with ``group``, that
        group's limits in force, its active jobs and its pause."""
        if group is not None:
            return self._drive(self._core.groups.group_limits(queue, group))
        return self._drive(self._core.limits.get_limits(queue))

    def pause(self, queue: str, *, group: str | None = None) -> None:
        """Pause a job queue durably, on every worker and host: once this returns
        no job of ``queue`` starts until `resume` (the take script refuses), and
        restarting every worker does not undo it. Active jobs run on and finish;
        delayed jobs still become due and schedules still fire, and their jobs
        wait. A new queue becomes a job queue (it may be paused before it has
        jobs); one holding tasks raises `WrongQueueKindError`. With ``group``:
        only that fair-share group, the others run on."""
        if group is not None:
            self._drive(self._core.groups.pause_group(queue, group))
            return
        self._drive(self._core.pausing.pause(queue))

    def resume(self, queue: str, *, group: str | None = None) -> None:
        """Undo `pause`: jobs of ``queue`` start again, and as many idle workers
        are woken as it has ready jobs (no more than its limits let start). A
        queue that is not paused is left as it is. With ``group``: that group."""
        if group is not None:
            self._drive(self._core.groups.resume_group(queue, group))
            return
        self._drive(self._core.pausing.resume(queue))

    def is_paused(self, queue: str, *, group: str | None = None) -> bool:
        """Whether `pause` holds ``queue`` (False for a task queue or an unknown
        one); with ``group``, whether that group is paused."""
        if group is not None:
            return self._drive(self._core.groups.is_group_paused(queue, group))
        return self._drive(self._core.pausing.is_paused(queue))

    # -- reading ---------------------------------------------------------------

    def get_queues(self) -> list[str]:
        """The mesh's known queues, sorted."""
        return self._drive(self._core.reads.get_queues())

    def get_workers(self) -> list[str]:
        """The registered workers' ids, sorted (the dead ones until peers fail them)."""
        return self._drive(self._core.reads.get_workers())

    def get_working_queues(self, worker_id: str | None = None) -> list[str]:
        """The queues ``worker_id`` works on (default: this client's worker)."""
        return self._drive(self._core.reads.get_working_queues(worker_id))

    def get_worker_info(self, worker_id: str) -> dict[str, str]:
        """A worker's host, pid and start time, as it registered them."""
        return self._drive(self._core.reads.get_worker_info(worker_id))

    def count_tasks(self, queue: str) -> int:
        """Tasks queued on ``queue`` (on a job queue: its queued jobs)."""
        return self._drive(self._core.job_reads.count_tasks(queue))

    def count_processes(self, queue: str) -> int:
        """Processes of ``queue`` in flight on any worker."""
        return self._drive(self._core.reads.count_processes(queue))

    def count_failed(self, queue: str) -> int:
        """Dead letters of ``queue``."""
        return self._drive(self._core.dead_letters.count_failed(queue))

    def get_failed(self, queue: str) -> list[str | bytes]:
        """The dead letters of ``queue``, newest first."""
        return self._drive(self._core.dead_letters.get_failed(queue))

    def get_stats(self, queue: str) -> dict[str, int]:
        """Lifetime counters of ``queue`` by event; events that never happened are
        absent. A task queue counts enqueued, dequeued, finished, stopped,
        released, recovered, dead_lettered, failed, cancelled, redriven; a job
        queue submitted, deduplicated, promoted, started, finished, retried,
        failed, poisoned, cancelled, recovered, released, stopped, redriven,
        purged, purged_by_cap, rate_limited."""
        return self._drive(self._core.reads.get_stats(queue))

    def get_history(self, queue: str, *, since: float = 3600.0) -> list[HistoryPoint]:
        """The metrics history of job queue ``queue`` (docs/history.md): its
        points that start at or after now - ``since`` seconds on Redis's clock
        (at most 72 hours), oldest first, empty ones left out; one a minute up
        to 8 hours back, one per ten minutes beyond."""
        return self._drive(self._core.history.read(queue, since))

    def workers_alive(self, worker_ids: Iterable[str]) -> list[bool]:
        """Whether each worker's lease currently exists."""
        return self._drive(self._core.reads.workers_alive(worker_ids))

    def count_worker_processes(self, queue: str, worker_id: str) -> int:
        """Processes ``worker_id`` holds on ``queue``."""
        return self._drive(self._core.reads.count_worker_processes(queue, worker_id))

    def requeue_failed(self, queue: str) -> int:
        """Move the dead letters of ``queue`` to its back, oldest first, one atomic
        move each; returns how many. On a job queue: ``retry_jobs(queue,
        state="failed")``."""
        return self._drive(self._core.dead_letters.requeue_failed(queue))

    def purge_failed(self, queue: str) -> int:
        """Drop the dead letters of ``queue``; returns how many."""
        return self._drive(self._core.dead_letters.purge_failed(queue))

    # -- working ---------------------------------------------------------------

    def start_worker(self) -> str:
        """Register in the mesh and start the heartbeat and peer supervision;
        returns the worker id (the same one when called again)."""
        with self._start_lock:
            if self._core.state.worker_id is not None:
                return self._core.state.worker_id
            worker = self._drive(self._core.membership.start_worker())
            self._start_heartbeat()
            return worker

    def start_work(self, queue: str) -> None:
        """Join ``queue``: dequeue from it and hear its wake-ups."""
        self._drive(self._core.membership.start_work(queue))

    def stop_work(self, queue: str) -> None:
        """Stop working on ``queue``; its processes go back to the front."""
        self._drive(self._core.membership.stop_work(queue))

    def on(self, queue: str, callback: Callback) -> None:
        """Call ``callback(event, message)`` for "work" (a hint of how many tasks
        arrived), "cancel" (process ids) and "delete" (None). With `AsyncWorqr`
        the callback may be a coroutine function."""
        self._drive(self._core.notifications.on(queue, callback))

    def dequeue(self, queue: str) -> Process | None:
        """Take the task at the front of ``queue`` as a process, or None when it
        is empty (joins the queue if needed)."""
        taken = self._drive(self._core.processes.dequeue(queue, 1))
        return taken[0] if taken else None

    def dequeue_many(self, queue: str, count: int) -> list[Process]:
        """Take up to ``count`` tasks from the front of ``queue``; a large count
        runs as script calls of at most 500 tasks each."""
        return self._drive(self._core.processes.dequeue(queue, count))

    def finish_process(self, process: str | Process) -> bool:
        """End a process; False if it no longer exists (fenced: its worker was
        failed, or it was cancelled or deleted)."""
        return self._drive(self._core.processes.finish_process(process))

    def complete(
        self, queue: str, finished: Iterable[str | Process], count: int = 0
    ) -> tuple[list[bool], list[Process]]:
        """Finish processes of ``queue`` and take up to ``count`` more tasks from its
        front, in one script call. Returns a flag per finished process (False: it no
        longer existed, as `finish_process`) and the new processes."""
        return self._drive(self._core.processes.complete(queue, finished, count))

    def stop_process(self, process: str | Process) -> bool:
        """End a process and put its task back at the front of its queue; False
        if it no longer exists."""
        return self._drive(self._core.processes.stop_process(process))

    def fail_process(self, process: str | Process) -> bool:
        """Dead-letter a process whose task failed; False if it no longer exists."""
        return self._drive(self._core.processes.fail_process(process))

    def processes_exist(self, queue: str, pids: Iterable[str]) -> list[bool]:
        """Whether each process still exists (not finished, cancelled or failed over)."""
        return self._drive(self._core.processes.processes_exist(queue, pids))

    def fail_worker(self) -> int:
        """Return every process of this worker to the front of its queue; the
        worker stays registered. Returns how many."""
        return self._drive(self._core.membership.fail_worker())

    def reconcile(self) -> int:
        """Return to the front the processes Redis says this worker holds but this
        client no longer runs (acknowledgements Redis lost, e.g. in a failover);
        heartbeats do it after an outage. Returns how many."""
        return self._drive(self._core.liveness.reconcile())

    def reap(self) -> int:
        """Fail every dead worker now; returns how many (peers also do it on their
        own, once per interval for the whole mesh). Also tidies the job queues no
        worker serves (expired records purged, due jobs promoted), at most once
        per 30 s for the whole mesh."""
        return self._drive(self._core.liveness.reap())

    def heartbeat(self) -> str:
        """Run one heartbeat now (the background loop does it every interval):
        "ok", "reaped", "recovered" (the lease was lost; re-registered) or
        "leaving"."""
        return self._drive(self._core.liveness.heartbeat(), deadline=0)
