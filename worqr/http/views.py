"""What the API answers, as the models of `replies`, built from the library's
reads: a job's record, a queue's row, a worker's row, a job queue's limits.
The operations (`jobs`, `queues`, `limits`) answer with them, and the web view
(`worqr.web`) reads through them, adding only what its pages alone show.

A value (payload, result, progress) that is ``str`` goes under its name, one
that is ``bytes`` under ``<name>_b64`` as base64 (as `worqr job --json`).
Payloads and results are left out of job records unless the server runs with
``--show-payloads``: a status or a list shows state, never data. The result
endpoint always returns the result (that is what a submitter asks it for);
progress, a short status line the handler reports for watchers, is shown.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from .._clients.async_client import AsyncWorqr
from .._core.groups import GroupInfo
from .._core.limits import QueueLimits
from .._jobs import JobInfo
from .errors import job_not_found
from .replies import (
    GroupReply,
    JobCounts,
    JobReply,
    LimitsReply,
    QueueRow,
    RateReply,
    WorkerRow,
)


def value_fields(name: str, value: str | bytes | None) -> dict[str, Any]:
    if isinstance(value, bytes):
        return {f"{name}_b64": base64.b64encode(value).decode("ascii")}
    return {name: value}


def job_reply(job: JobInfo, *, show_payloads: bool) -> JobReply:
    """The job's record; times are Redis server epoch seconds (None when unset)."""
    values = value_fields("progress", job.progress)
    if job.group is not None:
        values["group"] = job.group
    if show_payloads:
        values.update(value_fields("payload", job.payload))
        values.update(value_fields("result", job.result))
    return JobReply(
        id=job.id,
        queue=job.queue,
        state=job.state,
        attempts=job.attempts,
        error=job.error,
        created=job.created,
        started=job.started,
        ended=job.ended,
        due=job.due,
        **values,
    )


def job_json(job: JobInfo, *, show_payloads: bool) -> dict[str, Any]:
    """`job_reply` as JSON-ready data (the event stream's)."""
    return job_reply(job, show_payloads=show_payloads).model_dump(mode="json", exclude_unset=True)


async def existing_job(client: AsyncWorqr, queue: str, id: str) -> JobInfo:
    """The job ``id`` of ``queue``; `job_not_found` (404) when there is none."""
    job = await client.get_job(queue, id)
    if job is None:
        raise job_not_found(queue, id)
    return job


async def queue_kind(client: AsyncWorqr, name: str) -> str:
    """ "jobs" or "tasks", as the queue's config says (the command line's own
    read). The public job reads refuse a task queue only while it holds tasks
    or processes, so one whose tasks all went to its dead letters would pass
    for an empty job queue and hide them."""
    return await client.internals.queue_kind(name)


async def queue_row(client: AsyncWorqr, name: str) -> QueueRow:
    """A job queue's per-state counts, or a task queue's queued tasks; both
    with processes in flight and failed work. Each number is exact when read."""
    if await queue_kind(client, name) == "tasks":
        tasks, processes, failed = await asyncio.gather(
            client.count_tasks(name), client.count_processes(name), client.count_failed(name)
        )
        return QueueRow(name=name, kind="tasks", tasks=tasks, processes=processes, failed=failed)
    jobs = await client.count_jobs(name)
    return QueueRow(
        name=name,
        kind="jobs",
        jobs=JobCounts(**jobs),
        processes=jobs["active"],
        failed=jobs["failed"],
    )


async def worker_rows(client: AsyncWorqr) -> list[WorkerRow]:
    """Registered workers; ``alive`` is false for a dead one its peers have not
    failed yet."""
    ids = await client.get_workers()
    alive = await client.workers_alive(ids)

    async def row(id: str, live: bool) -> WorkerRow:
        info, queues = await asyncio.gather(
            client.get_worker_info(id), client.get_working_queues(id)
        )
        pid = info.get("pid")
        return WorkerRow(
            id=id,
            alive=live,
            host=info.get("host"),
            pid=int(pid) if pid and pid.isascii() and pid.isdigit() else None,
            queues=queues,
        )

    return list(await asyncio.gather(*(row(id, live) for id, live in zip(ids, alive, strict=True))))


def rate_reply(rate: tuple[int, float] | None) -> RateReply | None:
    """A rate named as the PUT body names it."""
    return None if rate is None else RateReply(starts=rate[0], seconds=rate[1])


def limits_reply(limits: QueueLimits) -> LimitsReply:
    """`QueueLimits` with the rate named as the PUT body names it."""
    return LimitsReply(
        rate=rate_reply(limits.rate),
        max_active=limits.max_active,
        active=limits.active,
        closed_until=limits.closed_until,
        limited=limits.limited,
        paused=limits.paused,
    )


def group_reply(info: GroupInfo) -> GroupReply:
    """A `GroupInfo` with the rate named as the PUT body names it."""
    return GroupReply(
        name=info.name,
        queued=info.queued,
        delayed=info.delayed,
        active=info.active,
        paused=info.paused,
        rate=rate_reply(info.rate),
        max_active=info.max_active,
        closed_until=info.closed_until,
        limited=info.limited,
    )
