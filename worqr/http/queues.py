"""The mesh routes: queues with their counts, workers, dead letters (list,
redrive, purge) and plain tasks (enqueue, cancel by payload)."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .._clients.async_client import AsyncWorqr
from .._errors import WrongQueueKindError
from .auth import protected
from .config import client_of, config_of
from .errors import bad_request
from .inputs import json_object, many_values, one_value, query_int, queue_of
from .views import job_json, value_fields

MAX_PAGE = 1000


async def queue_kind(client: AsyncWorqr, name: str) -> str:
    """ "jobs" or "tasks", as the queue's config says (the command line's own
    read). The public job reads refuse a task queue only while it holds tasks
    or processes, so one whose tasks all went to its dead letters would pass
    for an empty job queue and hide them."""
    return await client._queue_kind(name)


async def queue_row(client: AsyncWorqr, name: str) -> dict[str, Any]:
    """A job queue's per-state counts, or a task queue's queued tasks; both
    with processes in flight and failed work. Each number is exact when read."""
    if await queue_kind(client, name) == "tasks":
        tasks, processes, failed = await asyncio.gather(
            client.count_tasks(name), client.count_processes(name), client.count_failed(name)
        )
        return {
            "name": name,
            "kind": "tasks",
            "tasks": tasks,
            "processes": processes,
            "failed": failed,
        }
    jobs = await client.count_jobs(name)
    return {
        "name": name,
        "kind": "jobs",
        "jobs": jobs,
        "processes": jobs["active"],
        "failed": jobs["failed"],
    }


async def list_queues(request: Request) -> Response:
    client = client_of(request)
    names = await client.get_queues()
    rows = await asyncio.gather(*(queue_row(client, name) for name in names))
    return JSONResponse({"queues": list(rows)})


async def list_workers(request: Request) -> Response:
    """Registered workers; ``alive`` is false for a dead one its peers have not
    failed yet."""
    client = client_of(request)
    ids = await client.get_workers()
    alive = await client.workers_alive(ids)

    async def row(id: str, live: bool) -> dict[str, Any]:
        info, queues = await asyncio.gather(
            client.get_worker_info(id), client.get_working_queues(id)
        )
        pid = info.get("pid")
        return {
            "id": id,
            "alive": live,
            "host": info.get("host"),
            "pid": int(pid) if pid and pid.isdigit() else None,
            "queues": queues,
        }

    rows = await asyncio.gather(*(row(id, live) for id, live in zip(ids, alive, strict=True)))
    return JSONResponse({"workers": list(rows)})


async def dead_letters(request: Request) -> Response:
    """A job queue's failed jobs, a page at a time (as ``GET .../jobs?state=failed``);
    a task queue's dead letters, newest first: their count, and the tasks
    themselves only with ``--show-payloads`` (a dead letter is nothing but its
    payload)."""
    queue = queue_of(request)
    limit = query_int(request, "limit", 100, low=1, high=MAX_PAGE)
    cursor = request.query_params.get("cursor") or None
    client = client_of(request)
    show = config_of(request).show_payloads
    if await queue_kind(client, queue) == "jobs":
        try:
            jobs, after = await client.get_jobs(queue, "failed", limit=limit, cursor=cursor)
        except WrongQueueKindError:
            raise
        except (TypeError, ValueError) as error:  # a cursor that get_jobs did not make
            raise bad_request("invalid_parameter", str(error)) from None
        rows = [job_json(job, show_payloads=show) for job in jobs]
        return JSONResponse({"kind": "jobs", "jobs": rows, "cursor": after})
    answer: dict[str, Any] = {"kind": "tasks", "count": await client.count_failed(queue)}
    if show:
        tasks = (await client.get_failed(queue))[:limit]
        answer["tasks"] = [value_fields("task", task) for task in tasks]
    return JSONResponse(answer)


async def redrive(request: Request) -> Response:
    """Move every dead letter back to its queue (a job queue: every failed job
    gets a new life, but those another live job's unique marker blocks)."""
    queue = queue_of(request)
    return JSONResponse({"redriven": await client_of(request).requeue_failed(queue)})


async def purge(request: Request) -> Response:
    queue = queue_of(request)
    return JSONResponse({"purged": await client_of(request).purge_failed(queue)})


async def enqueue(request: Request) -> Response:
    """Add tasks to the back of a task queue: ``task`` (one) or ``tasks`` (a
    list, in order; ``*_b64`` for bytes). One bad task writes none."""
    queue = queue_of(request)
    body = await json_object(request, {"task", "task_b64", "tasks", "tasks_b64"})
    if "task" in body or "task_b64" in body:
        if "tasks" in body or "tasks_b64" in body:
            raise bad_request("invalid_option", "give task or tasks, not both")
        tasks = [one_value(body, "task")]
    else:
        tasks = many_values(body, "tasks")
    try:
        count = await client_of(request).enqueue_many(queue, tasks)
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # raised before anything is written
        raise bad_request("invalid_option", str(error)) from None
    return JSONResponse({"enqueued": count}, status_code=201)


async def cancel_tasks(request: Request) -> Response:
    """Cancel every copy of ``task``: queued ones removed, running ones stopped
    (on a job queue: its live jobs with that payload)."""
    queue = queue_of(request)
    body = await json_object(request, {"task", "task_b64"})
    task = one_value(body, "task")
    try:
        count = await client_of(request).cancel_tasks(queue, task)
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:
        raise bad_request("invalid_option", str(error)) from None
    return JSONResponse({"cancelled": count})


ROUTES: list[BaseRoute] = [
    Route("/v1/queues", protected(list_queues), methods=["GET"]),
    Route("/v1/workers", protected(list_workers), methods=["GET"]),
    Route("/v1/queues/{queue}/tasks", protected(enqueue), methods=["POST"]),
    Route("/v1/queues/{queue}/tasks/cancel", protected(cancel_tasks), methods=["POST"]),
    Route("/v1/queues/{queue}/dead-letters", protected(dead_letters), methods=["GET"]),
    Route("/v1/queues/{queue}/dead-letters", protected(purge), methods=["DELETE"]),
    Route("/v1/queues/{queue}/dead-letters/redrive", protected(redrive), methods=["POST"]),
]
