"""The mesh routes: queues with their counts, workers, dead letters (list,
redrive, purge) and plain tasks (enqueue, cancel by payload)."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from .._errors import WrongQueueKindError
from .config import client_of, config_of
from .errors import bad_request
from .models import CancelTasksBody, EnqueueBody, PageQuery
from .operations import Answer, Operation, reply
from .replies import (
    CancelledReply,
    DeadLettersReply,
    EnqueueReply,
    PurgedReply,
    QueuesReply,
    RedrivenReply,
    TaskValue,
    WorkersReply,
)
from .views import job_reply, queue_kind, queue_row, value_fields, worker_rows


async def list_queues(request: Request) -> Response:
    client = client_of(request)
    names = await client.get_queues()
    rows = await asyncio.gather(*(queue_row(client, name) for name in names))
    return reply(QueuesReply(queues=list(rows)))


async def list_workers(request: Request) -> Response:
    return reply(WorkersReply(workers=await worker_rows(client_of(request))))


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
