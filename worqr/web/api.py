"""The web view's JSON endpoints under ``/ui/api/``: what the pages poll, and
the few mutations their buttons send.

Queue names and job ids travel as query parameters or JSON fields, never in
the path: both may hold ``/``, ``?`` or ``#``. Every endpoint calls its guard
first, before anything is parsed or read: the read guard for the reads (GET),
the mutation guard for the mutations (POST); with a token configured both
want it (``Authorization: Bearer``, never a cookie or a query string).
Mutations (retry, cancel, redrive, purge, pause, resume) also insist on a JSON
body, which a cross-site form cannot send, so a view served without a token
still cannot be driven by another site.

The answers are the HTTP API's models (`worqr.http.replies`), the reads'
held by the view models of `reads`, and the errors are the API's too:
``{"error": {"code": ..., "message": ...}}``. The view keeps endpoints of its
own rather than calling ``/v1/...``: served alone it has no ``/v1`` routes,
its guards are not the API's (a read-only view), and a page's poll wants
one answer that holds the extras beside the records.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._clients.async_client import AsyncWorqr
from .._errors import WrongQueueKindError
from .._jobs import LISTED_STATES, validate_group, validate_job_id
from .._keys import validate_name
from ..http.errors import ApiError, error_response, job_not_found
from ..http.operations import reply
from ..http.replies import PausedReply, PurgedReply, RedrivenReply
from ..http.rules import CURSOR_PATTERN
from ..http.views import queue_kind
from . import reads
from .history import read_history, since_of
from .reads import JOB_PAGE_LOG_LINES
from .recoveries import RecoveryLog

Guard = Callable[[Request], None]
Handler = Callable[[Request], Awaitable[Response]]

MAX_BODY = 4096
"""Largest mutation body accepted: a queue name and a job id fit in it."""

DEFAULT_PAGE, MAX_PAGE = 50, 500


def client_of(request: Request) -> AsyncWorqr:
    client: AsyncWorqr = request.app.state.client
    return client


def show_payloads(request: Request) -> bool:
    return bool(getattr(request.app.state, "show_payloads", False))


def _checked(check: Callable[[Any], Any], value: Any, what: str) -> Any:
    try:
        return check(value)
    except (TypeError, ValueError) as error:
        raise ApiError(400, "bad_request", f"bad {what}: {error}") from None


async def known_queue(request: Request, name: object) -> str:
    """A queue the mesh knows; reading an unknown one would look like an empty one."""
    if name is None:
        raise ApiError(400, "bad_request", "missing queue name")
    queue: str = _checked(validate_name, name, "queue name")
    if queue not in await client_of(request).get_queues():
        raise ApiError(404, "unknown_queue", f"no queue {queue!r} in this mesh")
    return queue


async def job_queue(request: Request, name: object) -> str:
    """A known queue that holds jobs (the library answers False, not an error,
    for a job id on an empty task queue: it may become a job queue)."""
    queue = await known_queue(request, name)
    if await queue_kind(client_of(request), queue) != "jobs":
        raise ApiError(409, "wrong_queue_kind", f"queue {queue!r} holds tasks, not jobs")
    return queue


def _job_id(value: object) -> str:
    if value is None:
        raise ApiError(400, "bad_request", "missing job id")
    job_id: str = _checked(validate_job_id, value, "job id")
    return job_id


async def _body(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise ApiError(415, "unsupported_media_type", "send the body as application/json")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise ApiError(413, "too_large", f"the body is over {MAX_BODY} bytes")
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise ApiError(400, "bad_request", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "bad_request", "the body must be a JSON object")
    return body


def _errors_as_json(handler: Handler) -> Handler:
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as error:
            return error_response(error.status_code, error.code, error.message)
        except WrongQueueKindError as error:
            return error_response(409, "wrong_queue_kind", str(error))

    return wrapped


def _guarded(guard: Guard, handler: Handler) -> Handler:
    async def guarded(request: Request) -> Response:
        guard(request)  # first: nothing is read or parsed for a caller without the token
        return await handler(request)

    return guarded


def _overview(log: RecoveryLog) -> Handler:
    async def overview(request: Request) -> Response:
        return reply(await reads.overview(client_of(request), log))

    return overview


async def _queue(request: Request) -> Response:
    name = await known_queue(request, request.query_params.get("name"))
    return reply(await reads.queue_detail(client_of(request), name))


def _page(params: QueryParams) -> tuple[str, int, str | None]:
    """The state, the page size and the cursor (the API's rule) a jobs page asks for."""
    state = params.get("state", "queued")
    if state not in LISTED_STATES:
        raise ApiError(400, "bad_request", f"state must be one of {', '.join(LISTED_STATES)}")
    return (state, *_size_and_cursor(params))


def _size_and_cursor(params: QueryParams) -> tuple[int, str | None]:
    """The page size and the cursor (the API's rule) a page asks for."""
    limit = params.get("limit", str(DEFAULT_PAGE))
    if not limit.isdigit() or not 1 <= int(limit) <= MAX_PAGE:
        raise ApiError(400, "bad_request", f"limit must be 1 to {MAX_PAGE}")
    cursor = params.get("cursor") or None
    if cursor is not None and not re.fullmatch(CURSOR_PATTERN, cursor):
        raise ApiError(400, "bad_request", "cursor must be the previous page's")
    return int(limit), cursor


async def _jobs(request: Request) -> Response:
    name = await job_queue(request, request.query_params.get("queue"))
    state, limit, cursor = _page(request.query_params)
    return reply(await reads.jobs_page(client_of(request), name, state, limit=limit, cursor=cursor))


async def _groups(request: Request) -> Response:
    name = await job_queue(request, request.query_params.get("queue"))
    limit, cursor = _size_and_cursor(request.query_params)
    return reply(await reads.groups_page(client_of(request), name, limit=limit, cursor=cursor))


async def _job(request: Request) -> Response:
    client = client_of(request)
    name = await job_queue(request, request.query_params.get("queue"))
    job_id = _job_id(request.query_params.get("id"))
    found = await client.get_job(name, job_id)
    if found is None:
        raise job_not_found(name, job_id)
    log = await client.get_job_log(name, job_id, limit=JOB_PAGE_LOG_LINES)
    now = await client.server_time()
    return reply(reads.job_view(found, now, show_payloads=show_payloads(request), log=log))


async def _failed(request: Request) -> Response:
    client = client_of(request)
    name = await known_queue(request, request.query_params.get("queue"))
    kind = await queue_kind(client, name)
    return reply(await reads.dead_letters(client, name, kind, show_payloads=show_payloads(request)))


async def _history(request: Request) -> Response:
    """The charts' data: ``?queue=Q&since=S``, or every queue's summed without ``queue``."""
    params = request.query_params
    since = since_of(params.get("since", "3600"))
    name = params.get("queue")
    queue = None if name is None else await known_queue(request, name)
    return reply(await read_history(client_of(request), queue, since))


def _job_action(act: Callable[[AsyncWorqr, str, str], Awaitable[bool]]) -> Handler:
    """A button on a job (retry, cancel): ``{"done": false}`` when it did
    nothing (the API answers 409 or 404 there, with the reason; the button
    only says it was not done)."""

    async def action(request: Request) -> Response:
        body = await _body(request)
        name = await job_queue(request, body.get("queue"))
        done = await act(client_of(request), name, _job_id(body.get("id")))
        return JSONResponse({"done": done})

    return action


async def _redrive(request: Request) -> Response:
    name = await known_queue(request, (await _body(request)).get("queue"))
    return reply(RedrivenReply(redriven=await client_of(request).requeue_failed(name)))


async def _purge(request: Request) -> Response:
    name = await known_queue(request, (await _body(request)).get("queue"))
    return reply(PurgedReply(purged=await client_of(request).purge_failed(name)))


def _pausing(paused: bool) -> Handler:
    """The queue page's pause or resume buttons: a job queue's, or with
    ``group`` one of its fair-share groups' (`Worqr.pause`)."""

    async def action(request: Request) -> Response:
        body = await _body(request)
        name = await job_queue(request, body.get("queue"))
        group = (
            None if body.get("group") is None else _checked(validate_group, body["group"], "group")
        )
        client = client_of(request)
        await (client.pause if paused else client.resume)(name, group=group)
        if group is not None:
            return reply(PausedReply(paused=paused, group=group))
        return reply(PausedReply(paused=paused))

    return action


_BULK: dict[str, Callable[[AsyncWorqr, str, str | None], Awaitable[int]]] = {
    "cancel": lambda client, queue, state: client.cancel_jobs(queue, state=state),
    "retry": lambda client, queue, state: client.retry_jobs(queue, state=state),
    "promote": lambda client, queue, state: client.promote_jobs(queue),
    "purge": lambda client, queue, state: client.purge_jobs(queue, str(state)),
}


async def _bulk(request: Request) -> Response:
    """A button over every job of a state (cancel, retry, promote, purge):
    ``{"done": n}``, how many; the library refuses a state that does not fit."""
    body = await _body(request)
    name = await job_queue(request, body.get("queue"))
    act = _BULK.get(str(body.get("action")))
    if act is None:
        raise ApiError(400, "bad_request", f"action must be one of {', '.join(_BULK)}")
    state = body.get("state")
    try:
        done = await act(client_of(request), name, None if state is None else str(state))
    except (TypeError, ValueError) as error:  # before anything is written
        raise ApiError(400, "bad_request", str(error)) from None
    return JSONResponse({"done": done})


def api_routes(read_guard: Guard, guard: Guard, log: RecoveryLog) -> list[Route]:
    """The endpoints: ``read_guard`` before each read, ``guard`` before each mutation."""
    reading = {
        "overview": _overview(log),
        "queue": _queue,
        "jobs": _jobs,
        "groups": _groups,
        "job": _job,
        "failed": _failed,
        "history": _history,
    }
    changing = {
        "retry": _job_action(AsyncWorqr.retry_job),
        "cancel": _job_action(AsyncWorqr.cancel_job),
        "redrive": _redrive,
        "purge": _purge,
        "pause": _pausing(True),
        "resume": _pausing(False),
        "bulk": _bulk,
    }
    routes = [
        Route(f"/ui/api/{path}", _guarded(read_guard, _errors_as_json(handler)), methods=["GET"])
        for path, handler in reading.items()
    ]
    routes += [
        Route(f"/ui/api/{path}", _guarded(guard, _errors_as_json(handler)), methods=["POST"])
        for path, handler in changing.items()
    ]
    return routes
