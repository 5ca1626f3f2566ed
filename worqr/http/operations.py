"""The API's operations, declared once: each `Operation` names its method, path,
inputs (path names, a query model, a body model) and answers (models by
status). From the same declarations come the routes (one per path, so a 405
lists every method the path has) and the OpenAPI document (`openapi`); the
endpoint receives its inputs already checked, so what the document says is
what the server enforces."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .auth import require_token
from .inputs import body_of, group_of, job_id_of, query_of, queue_of
from .replies import Reply

Endpoint = Callable[..., Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Answer:
    """One documented answer: its model (None: no JSON body), what it means,
    its headers (name -> description) and, for a created job, its links."""

    model: type[Reply] | None
    description: str
    headers: Mapping[str, str] = field(default_factory=dict)
    media_type: str = "application/json"
    links: bool = False


@dataclass(frozen=True, slots=True)
class Operation:
    """A method on a path, with everything the router and the document need.
    ``errors``: the error statuses it may answer besides those every operation
    may (`openapi.COMMON_ERRORS`)."""

    method: str
    path: str
    operation_id: str
    summary: str
    endpoint: Endpoint
    answers: Mapping[int, Answer]
    errors: tuple[int, ...] = ()
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    body_required: bool = True  # False: an empty body reads as {}

    @property
    def path_names(self) -> tuple[str, ...]:
        """The path's parameters, in order: ``queue``, then ``id`` or ``group`` if any."""
        return tuple(name for name in ("queue", "id", "group") if f"{{{name}}}" in self.path)

    async def handle(self, request: Request) -> Response:
        """Check the token, then every input, then call the endpoint with them."""
        require_token(request)
        inputs: dict[str, Any] = {}
        if "queue" in self.path_names:
            inputs["queue"] = queue_of(request)
        if "id" in self.path_names:
            inputs["id"] = job_id_of(request)
        if "group" in self.path_names:
            inputs["group"] = group_of(request)
        if self.query is not None:
            inputs["query"] = query_of(request, self.query)
        if self.body is not None:
            inputs["body"] = await body_of(request, self.body, required=self.body_required)
        return await self.endpoint(request, **inputs)


def reply(model: Reply, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """``model`` as JSON with only the fields that were set."""
    body = model.model_dump(mode="json", exclude_unset=True)
    return JSONResponse(body, status_code=status, headers=headers)


def routes(operations: Sequence[Operation]) -> list[BaseRoute]:
    """One route per path, serving each of its operations by method (HEAD with
    GET, as Starlette does): a method the path lacks is a 405 whose ``Allow``
    names all it has."""
    by_path: dict[str, dict[str, Operation]] = {}
    for operation in operations:
        methods = by_path.setdefault(operation.path, {})
        if operation.method in methods:
            raise ValueError(f"{operation.method} {operation.path} is declared twice")
        methods[operation.method] = operation
    # A path with a name where another has a word (``.../jobs/{id}`` and
    # ``.../jobs/cancel``) comes after it: the router answers a method neither
    # has for the first path it matches, and that 405 names the word's methods
    # (GET .../jobs/cancel is still the job named "cancel").
    ordered = sorted(by_path, key=lambda path: [part.startswith("{") for part in path.split("/")])
    return [
        Route(path, _dispatcher(by_path[path]), methods=list(by_path[path])) for path in ordered
    ]


def _dispatcher(methods: Mapping[str, Operation]) -> Endpoint:
    async def dispatch(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await methods[method].handle(request)

    return dispatch
