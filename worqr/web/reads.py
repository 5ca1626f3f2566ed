"""What the web view reads from the mesh, as JSON-ready dicts.

Each function takes the `AsyncWorqr` the application was given and only reads.
Payloads and results appear only when the caller asks (``show_payloads``);
otherwise only their sizes do, so the view can be shown to people who may not
read the data.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .._clients.async_client import AsyncWorqr
from .._jobs import STATES, JobInfo

TASK_STATES = ("queued", "active", "failed")
"""A task queue's counts: queued tasks, processes in flight, dead letters."""

PREVIEW_CHARS = 200
"""Longest preview of a value (a payload may be 256 MB)."""

LIST_ERROR_CHARS = 160
"""Longest error shown in a list of jobs (the job's page shows it whole: at most 1 KB)."""

MAX_DEAD_LETTERS = 100
"""Dead letters of a task queue listed at most (the count is exact)."""

Json = dict[str, Any]


def size(value: str | bytes | None) -> int | None:
    """Bytes of a value as stored, None for no value."""
    if value is None:
        return None
    return len(value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value)


def preview(value: str | bytes | None, limit: int = PREVIEW_CHARS) -> str | None:
    """A value as text for a page: printable text as is, anything else as a
    Python literal; cut at ``limit`` characters. The browser escapes it."""
    if value is None:
        return None
    head = value[: limit + 1]
    shown = head if isinstance(head, str) and head.isprintable() else repr(head)
    return shown if len(shown) <= limit else shown[:limit] + "..."


def _cut(text: str | None, limit: int) -> str | None:
    return text if text is None or len(text) <= limit else text[: limit - 3] + "..."


async def queue_counts(client: AsyncWorqr, name: str) -> Json:
    """A queue's kind, its count in each state, its lifetime counters and (a job
    queue) its traffic limits."""
    kind = await client._queue_kind(name)
    limits: Json | None = None
    if kind == "jobs":
        counts, stats, held = await asyncio.gather(
            client._job_counts(name), client.get_stats(name), client.get_limits(name)
        )
        limits = held.as_json()
    else:
        queued, active, failed, stats = await asyncio.gather(
            client.count_tasks(name),
            client.count_processes(name),
            client.count_failed(name),
            client.get_stats(name),
        )
        counts = {"queued": queued, "active": active, "failed": failed}
    return {"name": name, "kind": kind, "counts": counts, "stats": stats, "limits": limits}


async def worker_row(client: AsyncWorqr, worker: str, alive: bool) -> Json:
    info, queues = await asyncio.gather(
        client.get_worker_info(worker), client.get_working_queues(worker)
    )
    held = await asyncio.gather(*(client.count_worker_processes(q, worker) for q in queues))
    pid = info.get("pid", "")
    return {
        "id": worker,
        "alive": alive,
        "host": info.get("host", "?"),
        "pid": int(pid) if pid.isdigit() else None,
        "queues": queues,
        "in_process": sum(held),
    }


async def overview(client: AsyncWorqr) -> Json:
    """Every queue with its counts and counters, every registered worker, and
    Redis's clock (the page shows ages against it, never against the browser's)."""
    names, worker_ids, now = await asyncio.gather(
        client.get_queues(), client.get_workers(), client.server_time()
    )
    alive = await client.workers_alive(worker_ids)
    queues = await asyncio.gather(*(queue_counts(client, name) for name in names))
    workers = await asyncio.gather(
        *(worker_row(client, w, a) for w, a in zip(worker_ids, alive, strict=True))
    )
    return {
        "now": now,
        "prefix": client.settings.prefix,
        "queues": list(queues),
        "workers": list(workers),
    }


def job_row(job: JobInfo) -> Json:
    """A job in a list: what tells it apart, without its values."""
    return {
        "id": job.id,
        "state": job.state,
        "attempts": job.attempts,
        "created": job.created,
        "started": job.started,
        "ended": job.ended,
        "due": job.due,
        "error": _cut(job.error, LIST_ERROR_CHARS),
    }


def job_detail(job: JobInfo, *, show_payloads: bool) -> Json:
    """Everything about a job: its history (the times of each step it took),
    attempts, error, progress, and the sizes of its payload and result."""
    history = [("created", job.created)]
    if job.due is not None:
        history.append(("due", job.due))
    if job.started is not None:
        history.append(("last started", job.started))
    if job.ended is not None:
        history.append((job.state, job.ended))
    detail = {
        **job_row(job),
        "queue": job.queue,
        "error": job.error,
        "history": [{"step": step, "at": at} for step, at in history],
        "progress": preview(job.progress),
        "payload_bytes": size(job.payload),
        "result_bytes": size(job.result),
    }
    if show_payloads:
        detail["payload"] = preview(job.payload)
        detail["result"] = preview(job.result)
    return detail


async def jobs_page(
    client: AsyncWorqr, queue: str, state: str, *, limit: int, cursor: str | None
) -> Json:
    """One page of a job queue's jobs in ``state`` (delayed ones by due time)."""
    jobs, after = await client.get_jobs(queue, state, limit=limit, cursor=cursor)
    return {"state": state, "jobs": [job_row(job) for job in jobs], "cursor": after}


async def dead_letters(client: AsyncWorqr, queue: str, kind: str, *, show_payloads: bool) -> Json:
    """A task queue's dead letters (their sizes; previews with ``show_payloads``)
    or a job queue's failed jobs, latest first."""
    if kind == "jobs":
        jobs, after = await client.get_jobs(queue, "failed", limit=MAX_DEAD_LETTERS)
        return {"kind": kind, "jobs": [job_row(job) for job in jobs], "more": after is not None}
    letters = await client.get_failed(queue)
    shown = letters[:MAX_DEAD_LETTERS]
    rows: list[Json] = [{"bytes": size(letter)} for letter in shown]
    if show_payloads:
        for row, letter in zip(rows, shown, strict=True):
            row["payload"] = preview(letter)
    return {"kind": kind, "letters": rows, "more": len(letters) > len(shown)}


def all_states(kind: str) -> tuple[str, ...]:
    return STATES if kind == "jobs" else TASK_STATES
