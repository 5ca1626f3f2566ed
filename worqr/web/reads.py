"""What the web view reads from the mesh: the HTTP API's own models
(`worqr.http.replies`: a job's record, a queue's row, a worker's row, a
dead-letter page, a job queue's limits), built as the API builds them
(`worqr.http.views`), each held by a view model that adds
only what the pages alone show: lifetime counters (the rates between polls and
the recoveries come from them), a worker's processes in hand, a job's history
and the sizes and previews of its values, and Redis's clock for ages.

Each function takes the `AsyncWorqr` the application was given and only reads.
A job's record never carries its payload or result here, whatever the server's
``show_payloads`` (a value may be 256 MB and the pages poll): their sizes show,
and short previews only with ``show_payloads``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from pydantic import Field

from .._clients.async_client import AsyncWorqr
from .._jobs import JobInfo
from ..http.replies import (
    DeadLettersReply,
    GroupPage,
    JobPage,
    JobReply,
    LimitsReply,
    QueueRow,
    Reply,
    WorkerRow,
)
from ..http.views import group_reply, job_reply, limits_reply, queue_row, worker_rows
from .recoveries import Recovery, RecoveryLog

PREVIEW_CHARS = 200
"""Longest preview of a value (a payload may be 256 MB)."""

MAX_DEAD_LETTERS = 100
"""Dead letters (a job queue: failed jobs) listed at most (a task queue's count is exact)."""

Now = Annotated[float, Field(description="Redis's clock: the pages show ages against it")]


class QueueView(Reply):
    """A queue's row as the API lists it, and its lifetime counters."""

    row: QueueRow
    stats: dict[str, int]


class WorkerView(Reply):
    """A worker's row as the API lists it, and the processes it holds now."""

    row: WorkerRow
    in_process: int


class Overview(Reply):
    """Every queue and every registered worker, and the recoveries seen lately."""

    now: Now
    prefix: str
    queues: list[QueueView]
    workers: list[WorkerView]
    recoveries: list[Recovery]


class QueueDetail(Reply):
    """A queue's row and (a job queue) its limits."""

    row: QueueRow
    limits: LimitsReply | None
    now: Now


class GroupsView(Reply):
    """A page of a job queue's fair-share groups as the API gives it, and
    Redis's clock (the page shows how long a closed group stays closed)."""

    page: GroupPage
    now: Now


class Step(Reply):
    step: str
    at: float


JOB_PAGE_LOG_LINES = 100  # the newest lines of its log a job's page shows


class JobView(Reply):
    """A job's record (without its values), its history, the sizes of its
    payload and result, their previews with ``show_payloads`` only, and its log."""

    job: JobReply
    history: list[Step]
    payload_bytes: int | None
    result_bytes: int | None
    payload_preview: str | None = None
    result_preview: str | None = None
    log: list[str] = Field(default_factory=list)  # its newest lines (`get_job_log`)
    now: Now


class Letter(Reply):
    """A task queue's dead letter: its size, and a preview with ``show_payloads`` only."""

    bytes: int
    preview: str | None = None


class DeadLettersView(Reply):
    """The API's dead-letter page (a job queue: its failed jobs, without their
    values; a task queue: the count), and a task queue's first letters."""

    page: DeadLettersReply
    letters: list[Letter] | None = None


def nbytes(value: str | bytes) -> int:
    """Bytes of a value as stored."""
    return len(value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value)


def size(value: str | bytes | None) -> int | None:
    """Bytes of a value as stored, None for no value."""
    return None if value is None else nbytes(value)


def preview(value: str | bytes | None, limit: int = PREVIEW_CHARS) -> str | None:
    """A value as text for a page: printable text as is, anything else as a
    Python literal; cut at ``limit`` characters. The browser escapes it."""
    if value is None:
        return None
    head = value[: limit + 1]
    shown = head if isinstance(head, str) and head.isprintable() else repr(head)
    return shown if len(shown) <= limit else shown[:limit] + "..."


def record(job: JobInfo) -> JobReply:
    """A job's record as the API gives it without ``--show-payloads``."""
    return job_reply(job, show_payloads=False)


async def queue_view(client: AsyncWorqr, name: str) -> QueueView:
    row, stats = await asyncio.gather(queue_row(client, name), client.get_stats(name))
    return QueueView(row=row, stats=stats)


async def worker_view(client: AsyncWorqr, row: WorkerRow) -> WorkerView:
    held = await asyncio.gather(*(client.count_worker_processes(q, row.id) for q in row.queues))
    return WorkerView(row=row, in_process=sum(held))


async def overview(client: AsyncWorqr, log: RecoveryLog) -> Overview:
    """Every queue with its counts and counters, every registered worker, what
    moved since the last overview (``log``) and Redis's clock (the page shows
    ages against it, never against the browser's)."""
    names, rows, now = await asyncio.gather(
        client.get_queues(), worker_rows(client), client.server_time()
    )
    queues = await asyncio.gather(*(queue_view(client, name) for name in names))
    workers = await asyncio.gather(*(worker_view(client, row) for row in rows))
    log.observe(now, {q.row.name: q.stats for q in queues}, rows)
    return Overview(
        now=now,
        prefix=client.settings.prefix,
        queues=list(queues),
        workers=list(workers),
        recoveries=log.recent(),
    )


async def queue_detail(client: AsyncWorqr, name: str) -> QueueDetail:
    row = await queue_row(client, name)
    limits = limits_reply(await client.get_limits(name)) if row.kind == "jobs" else None
    return QueueDetail(row=row, limits=limits, now=await client.server_time())


async def jobs_page(
    client: AsyncWorqr, queue: str, state: str, *, limit: int, cursor: str | None
) -> JobPage:
    """One page of a job queue's jobs in ``state`` (delayed ones by due time)."""
    jobs, after = await client.get_jobs(queue, state, limit=limit, cursor=cursor)
    return JobPage(jobs=[record(job) for job in jobs], cursor=after)


async def groups_page(
    client: AsyncWorqr, queue: str, *, limit: int, cursor: str | None
) -> GroupsView:
    """One page of a job queue's groups (those with waiting or active jobs,
    limits of their own or a pause), with the limits in force."""
    (groups, after), now = await asyncio.gather(
        client.get_groups(queue, limit=limit, cursor=cursor), client.server_time()
    )
    page = GroupPage(groups=[group_reply(info) for info in groups], cursor=after)
    return GroupsView(page=page, now=now)


def history(job: JobInfo) -> list[Step]:
    """The times of each step the job took."""
    steps = [Step(step="created", at=job.created)]
    if job.due is not None:
        steps.append(Step(step="due", at=job.due))
    if job.started is not None:
        steps.append(Step(step="last started", at=job.started))
    if job.ended is not None:
        steps.append(Step(step=job.state, at=job.ended))
    return steps


def job_view(
    job: JobInfo, now: float, *, show_payloads: bool, log: list[str] | None = None
) -> JobView:
    """Everything about a job: its record, history, the sizes of its payload
    and result (previews of them with ``show_payloads``), and its log's newest
    lines (its handlers wrote them to be read: shown as errors are)."""
    view = JobView(
        job=record(job),
        history=history(job),
        payload_bytes=size(job.payload),
        result_bytes=size(job.result),
        log=log or [],
        now=now,
    )
    if show_payloads:
        view.payload_preview = preview(job.payload)
        view.result_preview = preview(job.result)
    return view


async def dead_letters(
    client: AsyncWorqr, queue: str, kind: str, *, show_payloads: bool
) -> DeadLettersView:
    """A job queue's failed jobs, latest first, or a task queue's dead letters,
    newest first: their count and sizes (previews with ``show_payloads``)."""
    if kind == "jobs":
        jobs, after = await client.get_jobs(queue, "failed", limit=MAX_DEAD_LETTERS)
        page = DeadLettersReply(kind="jobs", jobs=[record(job) for job in jobs], cursor=after)
        return DeadLettersView(page=page)
    values = await client.get_failed(queue)
    letters = [letter(value, show_payloads) for value in values[:MAX_DEAD_LETTERS]]
    return DeadLettersView(page=DeadLettersReply(kind="tasks", count=len(values)), letters=letters)


def letter(value: str | bytes, show_payloads: bool) -> Letter:
    if show_payloads:
        return Letter(bytes=nbytes(value), preview=preview(value))
    return Letter(bytes=nbytes(value))
