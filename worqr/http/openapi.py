"""The OpenAPI 3.1 document served at ``/openapi.json``, written out by hand
(a test checks that it names exactly the app's routes and methods)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .._jobs import STATES
from .._version import __version__

Schema = dict[str, Any]

_ERROR_CODES = {
    "400": "bad request: invalid_json, unknown_field, invalid_option, invalid_queue_name, "
    "invalid_job_id, invalid_parameter",
    "401": "unauthorized: the bearer token is missing or wrong",
    "403": "untrusted_host, or cross_origin: a mutation from another site's page",
    "404": "job_not_found (or not_found: no such route)",
    "409": "wrong_queue_kind (a task operation on a job queue or the reverse), "
    "not_cancellable, not_retryable",
    "413": "body_too_large",
    "503": "redis_unavailable, or ambiguous_result (a submit with its own id is safe to resend)",
}


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: Schema, description: str) -> Schema:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _param(name: str, where: str, schema: Schema, description: str, required: bool) -> Schema:
    return {
        "name": name,
        "in": where,
        "required": required,
        "schema": schema,
        "description": description,
    }


QUEUE = _param(
    "queue", "path", {"type": "string"}, "queue name, percent-encoded ('/' as %2F)", True
)
JOB_ID = _param("id", "path", {"type": "string"}, "job id, percent-encoded ('/' as %2F)", True)
LIMIT = _param(
    "limit", "query", {"type": "integer", "minimum": 1, "maximum": 1000}, "page size", False
)
CURSOR = _param("cursor", "query", {"type": "string"}, "from the previous page", False)


def _operation(
    summary: str,
    ok: dict[str, Schema],
    *,
    params: list[Schema],
    errors: tuple[str, ...] = (),
    body: Schema | None = None,
) -> Schema:
    responses = dict(ok)
    for status in ("400", "401", "403", *errors, "503"):
        responses[status] = _json(_ref("Error"), _ERROR_CODES[status])
    operation: Schema = {"summary": summary, "parameters": params, "responses": responses}
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body}},
        }
        operation["responses"]["413"] = _json(_ref("Error"), _ERROR_CODES["413"])
    return operation


def _values(name: str, many: bool = False) -> Schema:
    item: Schema = {"type": "string"}
    kind: Schema = {"type": "array", "items": item, "minItems": 1} if many else item
    return {name: kind, f"{name}_b64": {**kind, "description": "bytes, base64"}}


def _object(properties: Schema, required: tuple[str, ...] = ()) -> Schema:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


NUMBER = {"type": "number", "minimum": 0}
SUBMIT = _object(
    {
        **_values("payload"),
        "id": {"type": "string", "maxLength": 256},
        "delay": {**NUMBER, "description": "seconds until due (not with at)"},
        "at": {"type": "number", "description": "epoch seconds on Redis's clock (not with delay)"},
        "priority": {"type": "integer", "minimum": -1_000_000, "maximum": 1_000_000},
        "unique": {"type": "boolean", "description": "at most one live job with this payload"},
        "retries": {"type": "integer", "minimum": 0},
        "backoff": {
            "description": "fixed seconds, or an exponential backoff",
            "oneOf": [
                NUMBER,
                _object({name: NUMBER for name in ("base", "factor", "max", "jitter")}),
            ],
        },
        "timeout": {**NUMBER, "exclusiveMinimum": 0},
        "result_ttl": NUMBER,
    }
)
TIME = {"type": ["number", "null"], "description": "Redis server epoch seconds"}
JOB = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "queue": {"type": "string"},
        "state": {"enum": [*STATES, "waiting"]},
        "attempts": {"type": "integer"},
        "error": {"type": ["string", "null"]},
        **{name: TIME for name in ("created", "started", "ended", "due")},
        **_values("progress"),
        **_values("payload"),
        **_values("result"),
    },
    "description": "payload and result only with --show-payloads",
}
ANY_OBJECT: Schema = {"type": "object"}
RATE: Schema = {
    "description": "at most `starts` job starts in any `seconds`, spaced evenly; null: none",
    "oneOf": [
        {"type": "null"},
        _object(
            {
                "starts": {"type": "integer", "minimum": 1},
                "seconds": {"type": "number", "exclusiveMinimum": 0},
            },
            required=("starts", "seconds"),
        ),
    ],
}
CAP: Schema = {"type": ["integer", "null"], "minimum": 1, "description": "most active jobs"}
LIMITS = _object(
    {
        "rate": RATE,
        "max_active": CAP,
        "active": {"type": "integer"},
        "closed_until": TIME,
        "limited": {"type": "boolean", "description": "the limits keep a job from starting now"},
    }
)


def document() -> Schema:
    job_paths = "/v1/queues/{queue}/jobs/{id}"
    ok = _json
    return {
        "openapi": "3.1.0",
        "info": {"title": "worqr", "version": __version__},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": _object(
                    {"error": _object({"code": {"type": "string"}, "message": {"type": "string"}})}
                ),
                "Job": JOB,
            },
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/queues": {
                "get": _operation(
                    "queues with their counts", {"200": ok(ANY_OBJECT, "queues")}, params=[]
                )
            },
            "/v1/workers": {
                "get": _operation(
                    "registered workers", {"200": ok(ANY_OBJECT, "workers")}, params=[]
                )
            },
            "/v1/queues/{queue}/jobs": {
                "post": _operation(
                    "submit a job",
                    {
                        "201": ok(ANY_OBJECT, "created: {id}"),
                        "200": ok(ANY_OBJECT, "a live duplicate"),
                    },
                    params=[QUEUE],
                    errors=("409",),
                    body=SUBMIT,
                ),
                "get": _operation(
                    "jobs in a state, a page at a time",
                    {"200": ok(ANY_OBJECT, "{jobs, cursor}")},
                    params=[
                        QUEUE,
                        _param("state", "query", {"enum": list(STATES)}, "job state", True),
                        LIMIT,
                        CURSOR,
                    ],
                    errors=("409",),
                ),
            },
            job_paths: {
                "get": _operation(
                    "a job's status",
                    {"200": ok(_ref("Job"), "the job")},
                    params=[QUEUE, JOB_ID],
                    errors=("404", "409"),
                ),
                "delete": _operation(
                    "cancel a job",
                    {"200": ok(ANY_OBJECT, "cancelled")},
                    params=[QUEUE, JOB_ID],
                    errors=("404", "409"),
                ),
            },
            f"{job_paths}/result": {
                "get": _operation(
                    "a job's result, waiting up to ?wait= seconds",
                    {
                        "200": ok(ANY_OBJECT, "ended: {id, state, result | error}"),
                        "202": ok(ANY_OBJECT, "not ended yet: {id, state}"),
                    },
                    params=[
                        QUEUE,
                        JOB_ID,
                        _param(
                            "wait", "query", {**NUMBER, "maximum": 60}, "seconds to wait", False
                        ),
                    ],
                    errors=("404", "409"),
                )
            },
            f"{job_paths}/retry": {
                "post": _operation(
                    "retry a failed or cancelled job",
                    {"200": ok(ANY_OBJECT, "queued")},
                    params=[QUEUE, JOB_ID],
                    errors=("404", "409"),
                )
            },
            f"{job_paths}/events": {
                "get": _operation(
                    "Server-Sent Events: state, progress, end",
                    {
                        "200": {
                            "description": "an event stream",
                            "content": {"text/event-stream": {}},
                        }
                    },
                    params=[QUEUE, JOB_ID],
                    errors=("404", "409"),
                )
            },
            "/v1/queues/{queue}/tasks": {
                "post": _operation(
                    "enqueue tasks on a task queue",
                    {"201": ok(ANY_OBJECT, "{enqueued}")},
                    params=[QUEUE],
                    errors=("409",),
                    body=_object({**_values("task"), **_values("tasks", many=True)}),
                )
            },
            "/v1/queues/{queue}/tasks/cancel": {
                "post": _operation(
                    "cancel every copy of a task",
                    {"200": ok(ANY_OBJECT, "{cancelled}")},
                    params=[QUEUE],
                    body=_object(_values("task")),
                )
            },
            "/v1/queues/{queue}/dead-letters": {
                "get": _operation(
                    "dead letters (a job queue: its failed jobs)",
                    {"200": ok(ANY_OBJECT, "{kind, jobs, cursor} or {kind, count, tasks?}")},
                    params=[QUEUE, LIMIT, CURSOR],
                ),
                "delete": _operation(
                    "purge them", {"200": ok(ANY_OBJECT, "{purged}")}, params=[QUEUE]
                ),
            },
            "/v1/queues/{queue}/limits": {
                "get": _operation(
                    "a job queue's traffic limits, and whether they hold it back now",
                    {"200": ok(LIMITS, "the limits")},
                    params=[QUEUE],
                    errors=("409",),
                ),
                "put": _operation(
                    "change them: a field not given stays, null removes it",
                    {"200": ok(LIMITS, "the limits now")},
                    params=[QUEUE],
                    errors=("409",),
                    body=_object({"rate": RATE, "max_active": CAP}),
                ),
            },
            "/v1/queues/{queue}/dead-letters/redrive": {
                "post": _operation(
                    "move them back to the queue",
                    {"200": ok(ANY_OBJECT, "{redriven}")},
                    params=[QUEUE],
                )
            },
        },
    }


async def openapi(request: Request) -> Response:
    return JSONResponse(document())
