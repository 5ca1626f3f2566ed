"""The failed work of a queue: a task queue's dead-letter list, a job queue's
failed jobs. One set of methods for both kinds."""

from __future__ import annotations

from dataclasses import dataclass

from .._process import decode_task
from . import scripts
from .bulk import Bulk
from .calls import Plan, command
from .jobs_read import JobReads
from .jobs_work import JobWork
from .kinds import QueueKinds
from .state import CoreState


@dataclass(eq=False)
class DeadLetters:
    """The failed-work plans of a core (``core.dead_letters``), for both kinds."""

    state: CoreState
    kinds: QueueKinds
    job_reads: JobReads
    job_work: JobWork
    bulk: Bulk

    def count_failed(self, queue: str) -> Plan[int]:
        if (yield from self.kinds.of(queue)) == "jobs":
            return (yield from self.job_reads.count_jobs(queue))["failed"]
        return int((yield command("LLEN", self.state.queue_keys(queue).failed)))

    def get_failed(self, queue: str) -> Plan[list[str | bytes]]:
        """The failed tasks' payloads, newest first (on a job queue: the failed
        jobs' payloads, latest first; `get_jobs` gives their records)."""
        if (yield from self.kinds.of(queue)) == "jobs":
            payloads: list[str | bytes] = []
            cursor = None
            while True:
                jobs, cursor = yield from self.job_reads.get_jobs(
                    queue, "failed", limit=1000, cursor=cursor, group=None
                )
                payloads += [job.payload for job in jobs if job.payload is not None]
                if cursor is None:
                    return payloads
        entries = yield command("LRANGE", self.state.queue_keys(queue).failed, 0, -1)
        return [decode_task(entry, self.state.settings.decode_tasks) for entry in entries]

    def requeue_failed(self, queue: str) -> Plan[int]:
        """Move the dead letters present now to the back of the queue, oldest
        first, in chunks; returns how many moved. Each task moves atomically, so
        the plan is safe to stop and redo; letters that fail again meanwhile are
        left for the next call (no endless loop). On a job queue: every failed
        job gets a new life (``retry_jobs(state="failed")``), but those whose
        unique marker another live job holds."""
        if (yield from self.kinds.of(queue)) == "jobs":
            return (yield from self.bulk.retry_jobs(queue, state="failed"))
        keys = self.state.queue_keys(queue)
        chunk = self.state.settings.requeue_chunk
        publish = yield from self.state.publishing()
        moved_total = 0
        limit: int | None = None
        while limit is None or moved_total < limit:
            want = chunk if limit is None else min(chunk, limit - moved_total)
            moved, remaining = yield scripts.requeue_failed(keys, count=want, publish=publish)
            moved_total += int(moved)
            if limit is None:
                limit = int(moved) + int(remaining)
            if int(moved) == 0 or int(remaining) == 0:
                break
        return moved_total

    def purge_failed(self, queue: str) -> Plan[int]:
        """Drop the queue's dead letters (on a job queue: its failed jobs); returns
        how many."""
        if (yield from self.kinds.of(queue)) == "jobs":
            return (yield from self.job_work.purge_failed_jobs(queue))
        return int((yield scripts.purge_failed(self.state.queue_keys(queue))))
