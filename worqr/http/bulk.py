"""The bulk operations on a job queue (cancel, retry, promote, purge), changing
one waiting job, and deleting a queue. `POST .../jobs/cancel` and its siblings
share the prefix of `.../jobs/{id}`, which has no POST: they are never read as
a job named "cancel" (`GET` or `PATCH .../jobs/cancel` is that job)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from .._errors import QueueBusyError, WrongQueueKindError
from .config import client_of, config_of
from .errors import ApiError, bad_request, job_not_found
from .jobs import JOB, JOBS
from .models import (
    CancelJobsBody,
    DeleteQueueQuery,
    PromoteJobsBody,
    PurgeJobsQuery,
    RetryJobsBody,
    UpdateJobBody,
)
from .operations import Answer, Operation, reply
from .replies import (
    CancelledReply,
    DeletedReply,
    JobReply,
    PromotedReply,
    PurgedReply,
    RetriedReply,
)
from .views import job_reply

QUEUE = "/v1/queues/{queue}"


async def cancel_jobs(request: Request, queue: str, body: CancelJobsBody) -> Response:
    """Cancel every job in ``state`` (every job not terminal when left out),
    active ones' handlers stopped, in bounded chunks; how many."""
    count = await client_of(request).cancel_jobs(queue, state=body.state)
    return reply(CancelledReply(cancelled=count))


async def retry_jobs(request: Request, queue: str, body: RetryJobsBody) -> Response:
    client = client_of(request)
    count = await client.retry_jobs(queue, state=body.state, limit=body.limit)
    return reply(RetriedReply(retried=count))


async def promote_jobs(request: Request, queue: str, body: PromoteJobsBody) -> Response:
    count = await client_of(request).promote_jobs(queue, limit=body.limit)
    return reply(PromotedReply(promoted=count))


async def purge_jobs(request: Request, queue: str, query: PurgeJobsQuery) -> Response:
    client = client_of(request)
    count = await client.purge_jobs(
        queue, query.state, older_than=query.older_than, limit=query.limit
    )
    return reply(PurgedReply(purged=count))


async def update_job(request: Request, queue: str, id: str, body: UpdateJobBody) -> Response:
    """Change a delayed, queued or retrying job; the job as it is now."""
    client = client_of(request)
    try:
        updated = await client.update_job(queue, id, **body.changes())
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # raised before anything is written
        raise bad_request("invalid_option", str(error)) from None
    job = await client.get_job(queue, id)
    if job is None:
        raise job_not_found(queue, id)
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

OPERATIONS = [
    Operation(
        "POST",
        f"{JOBS}/cancel",
        "cancelJobs",
        "cancel many jobs",
        cancel_jobs,
        {200: Answer(CancelledReply, "how many were cancelled")},
        errors=_WRONG_KIND,
        body=CancelJobsBody,
    ),
    Operation(
        "POST",
        f"{JOBS}/retry",
        "retryJobs",
        "retry failed or cancelled jobs",
        retry_jobs,
        {200: Answer(RetriedReply, "how many were queued again")},
        errors=_WRONG_KIND,
        body=RetryJobsBody,
    ),
    Operation(
        "POST",
        f"{JOBS}/promote",
        "promoteJobs",
        "queue delayed jobs now",
        promote_jobs,
        {200: Answer(PromotedReply, "how many were queued")},
        errors=_WRONG_KIND,
        body=PromoteJobsBody,
    ),
    Operation(
        "DELETE",
        JOBS,
        "purgeJobs",
        "forget the records of ended jobs",
        purge_jobs,
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
