"""The job operations: submit, status, result, cancel, retry, events, and jobs
by state."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from .._errors import JobCancelledError, JobFailedError, WrongQueueKindError
from .._jobs import TERMINAL
from .._tracing import continued
from .config import client_of, config_of
from .errors import ApiError, bad_request, job_not_found
from .models import ListJobsQuery, LogQuery, SubmitBody, WaitQuery
from .operations import Answer, Operation, reply
from .replies import JobLogReply, JobPage, JobReply, ResultReply, StateReply, SubmitReply
from .sse import job_events
from .views import existing_job, job_reply, value_fields

JOBS = "/v1/queues/{queue}/jobs"
JOB = f"{JOBS}/{{id}}"


async def submit(request: Request, queue: str, body: SubmitBody) -> Response:
    """Create a job: 201 with its id; 200 and ``duplicate: true`` when a live
    job already has this id (or, with ``unique``, this payload). A W3C
    ``traceparent`` header is continued (docs/tracing.md)."""
    try:
        with continued(request.headers):
            ref = await client_of(request).submit(queue, body.value(), **body.options())
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # raised before anything is written
        raise bad_request("invalid_option", str(error)) from None
    answer = SubmitReply(id=ref.id, duplicate=ref.duplicate)
    if ref.duplicate:
        return reply(answer, 200)
    location = f"/v1/queues/{quote(queue, safe='')}/jobs/{quote(ref.id, safe='')}"
    return reply(answer, 201, headers={"Location": location})


async def get_job(request: Request, queue: str, id: str) -> Response:
    job = await existing_job(client_of(request), queue, id)
    return reply(job_reply(job, show_payloads=config_of(request).show_payloads))


async def result(request: Request, queue: str, id: str, query: WaitQuery) -> Response:
    """200 once the job ended: its result when finished, else its state and
    error; 202 with its state while it has not ended within ``?wait=`` seconds."""
    client = client_of(request)
    try:
        value = await client.result(queue, id, timeout=query.wait)
    except TimeoutError:
        job = await client.get_job(queue, id)
        if job is None:  # purged in between
            raise job_not_found(queue, id) from None
        return reply(ResultReply(id=id, state=job.state), 202)
    except JobFailedError as error:
        return reply(ResultReply(id=id, state="failed", error=error.error))
    except JobCancelledError:
        return reply(ResultReply(id=id, state="cancelled", error=None))
    return reply(ResultReply(id=id, state="finished", **value_fields("result", value)))


async def get_log(request: Request, queue: str, id: str, query: LogQuery) -> Response:
    """The newest ``?limit=`` lines of the job's log; 404 for an unknown job."""
    lines = await client_of(request).get_job_log(queue, id, limit=query.limit)
    if lines is None:
        raise job_not_found(queue, id)
    return reply(JobLogReply(id=id, lines=lines))


async def cancel(request: Request, queue: str, id: str) -> Response:
    client = client_of(request)
    if await client.cancel_job(queue, id):
        return reply(StateReply(id=id, state="cancelled"))
    job = await existing_job(client, queue, id)
    raise ApiError(409, "not_cancellable", f"job {id!r} is {job.state}: it cannot be cancelled")


async def retry(request: Request, queue: str, id: str) -> Response:
    client = client_of(request)
    if await client.retry_job(queue, id):
        return reply(StateReply(id=id, state="queued"))
    job = await existing_job(client, queue, id)
    reason = (
        "another live job holds its unique marker"
        if job.state in TERMINAL
        else "only a failed or cancelled job can be retried"
    )
    raise ApiError(409, "not_retryable", f"job {id!r} is {job.state}: {reason}")


async def list_jobs(request: Request, queue: str, query: ListJobsQuery) -> Response:
    """One page of the jobs in ``?state=``; ``cursor`` is null on the last page."""
    client = client_of(request)
    jobs, after = await client.get_jobs(
        queue, query.state, limit=query.limit, cursor=query.cursor, group=query.group
    )
    show = config_of(request).show_payloads
    return reply(JobPage(jobs=[job_reply(job, show_payloads=show) for job in jobs], cursor=after))


_WRONG_KIND = (409,)

OPERATIONS = [
    Operation(
        "POST",
        JOBS,
        "submitJob",
        "submit a job",
        submit,
        {
            201: Answer(SubmitReply, "created", {"Location": "the job's path"}, links=True),
            200: Answer(SubmitReply, "a live duplicate: nothing was created", links=True),
        },
        errors=_WRONG_KIND,
        body=SubmitBody,
    ),
    Operation(
        "GET",
        JOBS,
        "listJobs",
        "jobs in a state, a page at a time",
        list_jobs,
        {200: Answer(JobPage, "a page of jobs")},
        errors=_WRONG_KIND,
        query=ListJobsQuery,
    ),
    Operation(
        "GET",
        JOB,
        "getJob",
        "a job's status",
        get_job,
        {200: Answer(JobReply, "the job")},
        errors=(404, *_WRONG_KIND),
    ),
    Operation(
        "POST",
        f"{JOB}/cancel",
        "cancelJob",
        "cancel a job",
        cancel,
        {200: Answer(StateReply, "cancelled")},
        errors=(404, *_WRONG_KIND),
    ),
    Operation(
        "GET",
        f"{JOB}/result",
        "getJobResult",
        "a job's result, waiting up to ?wait= seconds",
        result,
        {
            200: Answer(ResultReply, "ended: its result, or its error"),
            202: Answer(ResultReply, "not ended within the wait: its state"),
        },
        errors=(404, *_WRONG_KIND),
        query=WaitQuery,
    ),
    Operation(
        "POST",
        f"{JOB}/retry",
        "retryJob",
        "retry a failed or cancelled job",
        retry,
        {200: Answer(StateReply, "queued again")},
        errors=(404, *_WRONG_KIND),
    ),
    Operation(
        "GET",
        f"{JOB}/log",
        "getJobLog",
        "the newest lines of a job's log",
        get_log,
        {200: Answer(JobLogReply, "its lines, oldest first (none: it logged nothing)")},
        errors=(404, *_WRONG_KIND),
        query=LogQuery,
    ),
    Operation(
        "GET",
        f"{JOB}/events",
        "getJobEvents",
        "Server-Sent Events: state, progress, end",
        job_events,
        {200: Answer(None, "an event stream", media_type="text/event-stream")},
        errors=(404, *_WRONG_KIND),
    ),
]
