"""The job routes: submit, status, result, cancel, retry, and jobs by state."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .._errors import JobCancelledError, JobFailedError, WrongQueueKindError
from .._jobs import STATES, TERMINAL, Backoff
from .auth import protected
from .config import MAX_WAIT_SECONDS, client_of, config_of
from .errors import ApiError, bad_request, job_not_found
from .inputs import job_id_of, json_object, one_value, query_int, query_number, queue_of
from .sse import job_events
from .views import job_json, value_fields

SUBMIT_OPTIONS = ("id", "delay", "at", "priority", "unique", "retries", "backoff", "timeout")
SUBMIT_FIELDS = frozenset({"payload", "payload_b64", *SUBMIT_OPTIONS, "result_ttl"})
BACKOFF_FIELDS = frozenset({"base", "factor", "max", "jitter"})
MAX_PAGE = 1000  # the most `get_jobs` returns per call


def _submit_options(body: dict[str, Any]) -> dict[str, Any]:
    """The options of `submit` in ``body``; their values are checked by the
    library, which raises before writing anything."""
    options = {name: body[name] for name in (*SUBMIT_OPTIONS, "result_ttl") if name in body}
    backoff = options.get("backoff")
    if isinstance(backoff, dict):  # {"base": 1, "factor": 2, ...}; a number: fixed seconds
        unknown = sorted(set(backoff) - BACKOFF_FIELDS)
        if unknown:
            raise bad_request("unknown_field", f"unknown backoff field(s) {unknown}")
        try:
            options["backoff"] = Backoff(**backoff)
        except (TypeError, ValueError) as error:
            raise bad_request("invalid_option", str(error)) from None
    if "id" in options and not isinstance(options["id"], str):
        raise bad_request("invalid_option", "id must be a string")
    return options


async def submit(request: Request) -> Response:
    """Create a job: 201 with its id; 200 and ``duplicate: true`` when a live
    job already has this id (or, with ``unique``, this payload)."""
    queue = queue_of(request)
    body = await json_object(request, SUBMIT_FIELDS)
    payload = one_value(body, "payload")
    options = _submit_options(body)
    try:
        ref = await client_of(request).submit(queue, payload, **options)
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # raised before anything is written
        raise bad_request("invalid_option", str(error)) from None
    answer = {"id": ref.id, "duplicate": ref.duplicate}
    if ref.duplicate:
        return JSONResponse(answer, status_code=200)
    location = f"/v1/queues/{quote(queue, safe='')}/jobs/{quote(ref.id, safe='')}"
    return JSONResponse(answer, status_code=201, headers={"Location": location})


async def get_job(request: Request) -> Response:
    queue, id = queue_of(request), job_id_of(request)
    job = await client_of(request).get_job(queue, id)
    if job is None:
        raise job_not_found(queue, id)
    return JSONResponse(job_json(job, show_payloads=config_of(request).show_payloads))


async def result(request: Request) -> Response:
    """200 once the job ended: its result when finished, else its state and
    error; 202 with its state while it has not ended within ``?wait=`` seconds."""
    queue, id = queue_of(request), job_id_of(request)
    wait = query_number(request, "wait", 0.0, low=0.0, high=MAX_WAIT_SECONDS)
    client = client_of(request)
    try:
        value = await client.result(queue, id, timeout=wait)
    except TimeoutError:
        job = await client.get_job(queue, id)
        if job is None:  # purged in between
            raise job_not_found(queue, id) from None
        return JSONResponse({"id": id, "state": job.state}, status_code=202)
    except JobFailedError as error:
        return JSONResponse({"id": id, "state": "failed", "error": error.error})
    except JobCancelledError:
        return JSONResponse({"id": id, "state": "cancelled", "error": None})
    return JSONResponse({"id": id, "state": "finished", **value_fields("result", value)})


async def cancel(request: Request) -> Response:
    queue, id = queue_of(request), job_id_of(request)
    client = client_of(request)
    if await client.cancel_job(queue, id):
        return JSONResponse({"id": id, "state": "cancelled"})
    job = await client.get_job(queue, id)
    if job is None:
        raise job_not_found(queue, id)
    raise ApiError(409, "not_cancellable", f"job {id!r} is {job.state}: it cannot be cancelled")


async def retry(request: Request) -> Response:
    queue, id = queue_of(request), job_id_of(request)
    client = client_of(request)
    if await client.retry_job(queue, id):
        return JSONResponse({"id": id, "state": "queued"})
    job = await client.get_job(queue, id)
    if job is None:
        raise job_not_found(queue, id)
    reason = (
        "another live job holds its unique marker"
        if job.state in TERMINAL
        else "only a failed or cancelled job can be retried"
    )
    raise ApiError(409, "not_retryable", f"job {id!r} is {job.state}: {reason}")


async def list_jobs(request: Request) -> Response:
    """One page of the jobs in ``?state=``; ``cursor`` is null on the last page."""
    queue = queue_of(request)
    state = request.query_params.get("state")
    if state not in STATES:
        raise bad_request("invalid_parameter", f"state must be one of {', '.join(STATES)}")
    limit = query_int(request, "limit", 100, low=1, high=MAX_PAGE)
    cursor = request.query_params.get("cursor") or None
    try:
        jobs, after = await client_of(request).get_jobs(queue, state, limit=limit, cursor=cursor)
    except WrongQueueKindError:
        raise
    except (TypeError, ValueError) as error:  # a cursor that get_jobs did not make
        raise bad_request("invalid_parameter", str(error)) from None
    show = config_of(request).show_payloads
    return JSONResponse({"jobs": [job_json(j, show_payloads=show) for j in jobs], "cursor": after})


ROUTES: list[BaseRoute] = [
    Route("/v1/queues/{queue}/jobs", protected(submit), methods=["POST"]),
    Route("/v1/queues/{queue}/jobs", protected(list_jobs), methods=["GET"]),
    Route("/v1/queues/{queue}/jobs/{id}", protected(get_job), methods=["GET"]),
    Route("/v1/queues/{queue}/jobs/{id}", protected(cancel), methods=["DELETE"]),
    Route("/v1/queues/{queue}/jobs/{id}/result", protected(result), methods=["GET"]),
    Route("/v1/queues/{queue}/jobs/{id}/retry", protected(retry), methods=["POST"]),
    Route("/v1/queues/{queue}/jobs/{id}/events", protected(job_events), methods=["GET"]),
]
