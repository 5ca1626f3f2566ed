"""The OpenAPI 3.1 document served at ``/openapi.json``, written from the
operations (`operations.Operation`) and their models (`models`): the same
declarations the server checks requests with, so the document states every
rule it enforces. Security is declared only when the server has a token, and
a submitted job's answers link to the operations that follow it (status,
result, events, cancel, retry), for clients that walk links."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .._version import __version__
from .operations import Answer, Operation
from .replies import ErrorReply
from .rules import GROUP_NAME, JOB_ID, QUEUE_NAME

Schema = dict[str, Any]

REF = "#/components/schemas/{model}"

ERROR_CODES = {
    400: "bad request: invalid_json, unknown_field, invalid_option, invalid_queue_name, "
    "invalid_job_id, invalid_group, invalid_dedup, invalid_parameter",
    401: "unauthorized: the bearer token is missing or wrong",
    403: "untrusted_host, or cross_origin: a mutation from another site's page",
    404: "job_not_found, schedule_not_found; not_found: no such path (an empty name)",
    409: "wrong_queue_kind (a task operation on a job queue or the reverse), "
    "not_cancellable, not_retryable, not_updatable, queue_busy",
    413: "body_too_large",
    503: "redis_unavailable, or ambiguous_result (the submit may have been applied: sending it "
    "again with the same id creates nothing twice while that job lives, but runs it again "
    "once it ended and was purged)",
}

# What a submitted job's answers link to: the operations on the job it made.
LINKED = ("getJob", "getJobResult", "getJobEvents", "getJobLog", "cancelJob", "retryJob")

PATH_PARAMETERS = {
    "queue": (QUEUE_NAME, "queue name, percent-encoded ('/' as %2F)"),
    "id": (JOB_ID, "job id, percent-encoded ('/' as %2F)"),
    "group": (GROUP_NAME, "fair-share group, percent-encoded ('/' as %2F)"),
}


def _strip_null_defaults(node: Any) -> None:
    """Drop ``"default": null`` from schemas that do not take null: pydantic
    writes it for fields that are left out rather than set to null, and a
    client that sent the default would be refused."""
    if isinstance(node, dict):
        if "default" in node and node["default"] is None and not _takes_null(node):
            del node["default"]
        for value in node.values():
            _strip_null_defaults(value)
    elif isinstance(node, list):
        for value in node:
            _strip_null_defaults(value)


def _takes_null(schema: Schema) -> bool:
    kinds = schema.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    return any(_takes_null(branch) for branch in schema.get("anyOf", ()))


def _models(operations: Sequence[Operation]) -> list[tuple[type[BaseModel], Any]]:
    """Every model the operations name, each once, in the mode it is used in."""
    models: dict[type[BaseModel], Any] = {ErrorReply: "serialization"}
    for operation in operations:
        if operation.body is not None:
            models[operation.body] = "validation"
        for answer in operation.answers.values():
            if answer.model is not None:
                models[answer.model] = "serialization"
    return list(models.items())


def _content(schema: Schema, media_type: str = "application/json") -> Schema:
    return {media_type: {"schema": schema}}


def _answer(answer: Answer, refs: dict[Any, Schema]) -> Schema:
    out: Schema = {"description": answer.description}
    if answer.model is not None:
        out["content"] = _content(refs[(answer.model, "serialization")])
    else:
        out["content"] = {answer.media_type: {}}
    if answer.headers:
        out["headers"] = {
            name: {"description": text, "required": True, "schema": {"type": "string"}}
            for name, text in answer.headers.items()
        }
    if answer.links:
        out["links"] = {
            target: {
                "operationId": target,
                "parameters": {"queue": "$request.path.queue", "id": "$response.body#/id"},
            }
            for target in LINKED
        }
    return out


def _parameters(operation: Operation) -> list[Schema]:
    parameters = []
    for name in operation.path_names:
        adapter, description = PATH_PARAMETERS[name]
        schema = adapter.json_schema()
        parameters.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "schema": schema,
                "description": description,
            }
        )
    if operation.query is not None:
        query = operation.query.model_json_schema()
        _strip_null_defaults(query)
        required = set(query.get("required", ()))
        for name, schema in query["properties"].items():
            parameters.append(
                {"name": name, "in": "query", "required": name in required, "schema": schema}
            )
    return parameters


def _errors(operation: Operation, token: bool) -> list[int]:
    """The error statuses ``operation`` may answer."""
    statuses = {403, 503, *operation.errors}
    if operation.path_names or operation.query is not None or operation.body is not None:
        statuses.add(400)
    if operation.path_names:
        statuses.add(404)  # an empty name matches no path
    if operation.body is not None:
        statuses.add(413)
    if token:
        statuses.add(401)
    return sorted(statuses)


def _operation(operation: Operation, refs: dict[Any, Schema], token: bool) -> Schema:
    responses = {str(status): _answer(answer, refs) for status, answer in operation.answers.items()}
    for status in _errors(operation, token):
        headers = {"WWW-Authenticate": 'Bearer realm="worqr"'} if status == 401 else {}
        error = Answer(ErrorReply, ERROR_CODES[status], headers)
        responses[str(status)] = _answer(error, refs)
    out: Schema = {
        "operationId": operation.operation_id,
        "summary": operation.summary,
        "parameters": _parameters(operation),
        "responses": responses,
    }
    if operation.body is not None:
        body = refs[(operation.body, "validation")]
        out["requestBody"] = {"required": operation.body_required, "content": _content(body)}
    return out


def document(operations: Sequence[Operation], *, token: bool) -> Schema:
    """The OpenAPI document of ``operations``, for a server with or without a token."""
    refs, definitions = models_json_schema(_models(operations), ref_template=REF)
    schemas = definitions.get("$defs", {})
    _strip_null_defaults(schemas)
    paths: dict[str, Schema] = {}
    for operation in operations:
        item = paths.setdefault(operation.path, {})
        item[operation.method.lower()] = _operation(operation, refs, token)
    doc: Schema = {
        "openapi": "3.1.0",
        "info": {"title": "worqr", "version": __version__},
        "components": {"schemas": schemas},
        "paths": paths,
    }
    if token:
        doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearer": []}]
    return doc


def openapi_route(operations: Sequence[Operation], *, token: bool) -> Route:
    """``GET /openapi.json``: the document, written once (it holds no data, so
    it needs no token)."""
    answer = JSONResponse(document(operations, token=token))

    async def openapi(request: Request) -> Response:
        return answer

    return Route("/openapi.json", openapi, methods=["GET"])
