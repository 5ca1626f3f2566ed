"""The bulk operations on a job queue (cancel, retry, promote, purge), changing
one waiting job, and deleting a queue. `POST .../jobs/cancel` and its siblings
share the prefix of `.../jobs/{id}`, which has no POST: they are never read as
a job named "cancel" (`GET` or `PATCH .../jobs/cancel` is that job)."""

from __future__ import annotations

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from .._errors import QueueBusyError, WrongQueueKindError
from .config import client_of, config_of
from .errors import ApiError, bad_request
from .jobs import JOB, JOBS
from .models import (
    CancelJobsBody,
    DeleteQueueQuery,
    PromoteJobsBody,
    PurgeJobsQuery,
    RetryJobsBody,
    UpdateJobBody,
)
from .operations import Answer, Endpoint, Operation, reply
from .replies import (
    CancelledReply,
    DeletedReply,
    JobReply,
    PromotedReply,
    PurgedReply,
    Reply,
    RetriedReply,
)
from .views import existing_job, job_reply

QUEUE = "/v1/queues/{queue}"


def _counting(word: str, answer: type[Reply]) -> Endpoint:
    """The endpoint of a bulk operation: the client's ``<word>_jobs`` called with
    the queue and the fields of the request's body (or query); how many jobs it
    changed, as ``answer``'s one field."""
    (field,) = answer.model_fields

    async def count_jobs(request: Request, queue: str, **inputs: BaseModel) -> Response:
        (given,) = inputs.values()
        run = getattr(client_of(request), f"{word}_jobs")
        count = await run(queue, **given.model_dump())
        return reply(answer.model_validate({field: count}))

    return count_jobs


async def update_job(request: Request, queue: str, id: str, body: UpdateJobBody) -> Response:
    """Change a delayed, queued or retrying job; the job as it is now."""
    client = client_of(request)
    try:
        updated = await client.update_job(queue, id, **body.changes())
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # raised before anything is written
        raise bad_request("invalid_option", str(error)) from None
    job = await existing_job(client, queue, id)
    if not updated:
        raise ApiError(
            409,
            "not_updatable",
            f"job {id!r} is {job.state}: only a delayed, queued or retrying job that belongs "
            "to no flow can change, and not to another live job's unique payload",
        )
    return reply(job_reply(job, show_payloads=config_of(request).show_payloads))


async def delete_queue(request: Request, queue: str, query: DeleteQueueQuery) -> Response:
    try:
        await client_of(request).delete_queue(queue, if_idle=query.if_idle)
    except QueueBusyError as error:
        raise ApiError(409, "queue_busy", str(error)) from None
    return reply(DeletedReply(deleted=queue))


_WRONG_KIND = (409,)

_COUNTING: list[tuple[str, type[BaseModel], type[Reply], str, str]] = [
    # POST .../jobs/<word> calls the client's <word>_jobs with the body's fields:
    # (word, body, the reply that counts, summary, what the count means). Cancel:
    # active jobs' handlers are stopped; every job not terminal when no state.
    ("cancel", CancelJobsBody, CancelledReply, "cancel many jobs", "how many were cancelled"),
    (
        "retry",
        RetryJobsBody,
        RetriedReply,
        "retry failed or cancelled jobs",
        "how many were queued again",
    ),
    ("promote", PromoteJobsBody, PromotedReply, "queue delayed jobs now", "how many were queued"),
]

OPERATIONS = [
    *(
        Operation(
            "POST",
            f"{JOBS}/{word}",
            f"{word}Jobs",
            summary,
            _counting(word, answer),
            {200: Answer(answer, meaning)},
            errors=_WRONG_KIND,
            body=body,
        )
        for word, body, answer, summary, meaning in _COUNTING
    ),
    Operation(
        "DELETE",
        JOBS,
        "purgeJobs",
        "forget the records of ended jobs",
        _counting("purge", PurgedReply),
        {200: Answer(PurgedReply, "how many records were forgotten")},
        errors=_WRONG_KIND,
        query=PurgeJobsQuery,
    ),
    Operation(
        "PATCH",
        JOB,
        "updateJob",
        "change a waiting job",
        update_job,
        {200: Answer(JobReply, "the job, changed")},
        errors=(404, 409),
        body=UpdateJobBody,
    ),
    Operation(
        "DELETE",
        QUEUE,
        "deleteQueue",
        "delete a queue",
        delete_queue,
        {200: Answer(DeletedReply, "deleted, with its jobs or tasks")},
        errors=(409,),
        query=DeleteQueueQuery,
    ),
]
