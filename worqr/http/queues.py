"""The mesh routes: queues with their counts, workers, dead letters (list,
redrive, purge) and plain tasks (enqueue, cancel by payload)."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from .._clients.async_client import AsyncWorqr
from .._errors import WrongQueueKindError
from .config import client_of, config_of
from .errors import bad_request
from .models import CancelTasksBody, EnqueueBody, PageQuery
from .operations import Answer, Operation, reply
from .replies import (
    CancelledReply,
    DeadLettersReply,
    EnqueueReply,
    JobCounts,
    PurgedReply,
    QueueRow,
    QueuesReply,
    RedrivenReply,
    TaskValue,
    WorkerRow,
    WorkersReply,
)
from .views import job_reply, value_fields


async def queue_kind(client: AsyncWorqr, name: str) -> str:
    """ "jobs" or "tasks", as the queue's config says (the command line's own
    read). The public job reads refuse a task queue only while it holds tasks
    or processes, so one whose tasks all went to its dead letters would pass
    for an empty job queue and hide them."""
    return await client._queue_kind(name)


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


async def list_queues(request: Request) -> Response:
    client = client_of(request)
    names = await client.get_queues()
    rows = await asyncio.gather(*(queue_row(client, name) for name in names))
    return reply(QueuesReply(queues=list(rows)))


async def list_workers(request: Request) -> Response:
    """Registered workers; ``alive`` is false for a dead one its peers have not
    failed yet."""
    client = client_of(request)
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

    rows = await asyncio.gather(*(row(id, live) for id, live in zip(ids, alive, strict=True)))
    return reply(WorkersReply(workers=list(rows)))


async def dead_letters(request: Request, queue: str, query: PageQuery) -> Response:
    """A job queue's failed jobs, a page at a time (as ``GET .../jobs?state=failed``);
    a task queue's dead letters, newest first: their count, and the tasks
    themselves only with ``--show-payloads`` (a dead letter is nothing but its
    payload)."""
    client = client_of(request)
    show = config_of(request).show_payloads
    if await queue_kind(client, queue) == "jobs":
        jobs, after = await client.get_jobs(queue, "failed", limit=query.limit, cursor=query.cursor)
        rows = [job_reply(job, show_payloads=show) for job in jobs]
        return reply(DeadLettersReply(kind="jobs", jobs=rows, cursor=after))
    answer = DeadLettersReply(kind="tasks", count=await client.count_failed(queue))
    if show:
        tasks = (await client.get_failed(queue))[: query.limit]
        answer.tasks = [TaskValue(**value_fields("task", task)) for task in tasks]
    return reply(answer)


async def redrive(request: Request, queue: str) -> Response:
    """Move every dead letter back to its queue (a job queue: every failed job
    gets a new life, but those another live job's unique marker blocks)."""
    return reply(RedrivenReply(redriven=await client_of(request).requeue_failed(queue)))


async def purge(request: Request, queue: str) -> Response:
    return reply(PurgedReply(purged=await client_of(request).purge_failed(queue)))


async def enqueue(request: Request, queue: str, body: EnqueueBody) -> Response:
    """Add tasks to the back of a task queue: ``task`` (one) or ``tasks`` (a
    list, in order; ``*_b64`` for bytes). One bad task writes none."""
    try:
        count = await client_of(request).enqueue_many(queue, body.values())
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # raised before anything is written
        raise bad_request("invalid_option", str(error)) from None
    return reply(EnqueueReply(enqueued=count), 201)


async def cancel_tasks(request: Request, queue: str, body: CancelTasksBody) -> Response:
    """Cancel every copy of ``task``: queued ones removed, running ones stopped
    (on a job queue: its live jobs with that payload)."""
    try:
        count = await client_of(request).cancel_tasks(queue, body.value())
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:
        raise bad_request("invalid_option", str(error)) from None
    return reply(CancelledReply(cancelled=count))


QUEUE = "/v1/queues/{queue}"
DEAD_LETTERS = f"{QUEUE}/dead-letters"

OPERATIONS = [
    Operation(
        "GET",
        "/v1/queues",
        "listQueues",
        "queues with their counts",
        list_queues,
        {200: Answer(QueuesReply, "every queue of the mesh")},
    ),
    Operation(
        "GET",
        "/v1/workers",
        "listWorkers",
        "registered workers",
        list_workers,
        {200: Answer(WorkersReply, "every registered worker")},
    ),
    Operation(
        "POST",
        f"{QUEUE}/tasks",
        "enqueueTasks",
        "enqueue tasks on a task queue",
        enqueue,
        {201: Answer(EnqueueReply, "enqueued, in order")},
        errors=(409,),
        body=EnqueueBody,
    ),
    Operation(
        "POST",
        f"{QUEUE}/tasks/cancel",
        "cancelTasks",
        "cancel every copy of a task",
        cancel_tasks,
        {200: Answer(CancelledReply, "how many copies were cancelled")},
        body=CancelTasksBody,
    ),
    Operation(
        "GET",
        DEAD_LETTERS,
        "listDeadLetters",
        "dead letters (a job queue: its failed jobs)",
        dead_letters,
        {200: Answer(DeadLettersReply, "its failed jobs, or its dead letters")},
        query=PageQuery,
    ),
    Operation(
        "POST",
        f"{DEAD_LETTERS}/purge",
        "purgeDeadLetters",
        "purge them",
        purge,
        {200: Answer(PurgedReply, "how many were purged")},
    ),
    Operation(
        "POST",
        f"{DEAD_LETTERS}/redrive",
        "redriveDeadLetters",
        "move them back to the queue",
        redrive,
        {200: Answer(RedrivenReply, "how many went back")},
    ),
]
