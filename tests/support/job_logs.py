"""A job with a log, written as the worker runtime writes one (its take, then
the fenced append), for the tests of the log's readers."""

from __future__ import annotations

import worqr
from worqr._core.job_logs import log_line


def logged_job(wq: worqr.Worqr, worker: worqr.Worqr, queue: str, lines: list[str]) -> str:
    """Submit a job on ``queue``, take it with ``worker`` (a started client) and
    append ``lines`` to its log; the job's id (it stays active)."""
    ref = wq.submit(queue, "p")
    worker.internals.mark_job_queue(queue)
    _, [process], _ = worker.internals.take_jobs(queue, [], 1)
    assert process.job_id == ref.id
    assert worker.internals.append_job_log(process, [log_line(line) for line in lines])
    return ref.id
