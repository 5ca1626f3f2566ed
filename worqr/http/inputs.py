"""Reading a request through the models of `models`: path names, the query
string and the JSON body. Every input is checked here, before an endpoint
calls the library, so a bad request writes nothing; a refusal is a 400 whose
code says which part was wrong and whose message says how."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import from_json
from starlette.requests import Request

from .._jobs import validate_group, validate_job_id
from .._keys import validate_name
from .errors import bad_request
from .models import FIELD_CODES
from .paths import path_name
from .rules import GROUP_NAME, JOB_ID, QUEUE_NAME

M = TypeVar("M", bound=BaseModel)

# A query value's grammar for each JSON type (the text of a JSON number).
_INTEGER = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _path_value(
    request: Request, name: str, adapter: TypeAdapter[str], explain: Callable[[str], Any], code: str
) -> str:
    value = path_name(request, name)
    try:
        return adapter.validate_python(value)
    except ValidationError as error:
        try:  # the library's own check says why in its words (the rules are the same)
            explain(value)
        except (TypeError, ValueError) as why:
            raise bad_request(code, str(why)) from None
        raise bad_request(code, describe(error)) from None


def queue_of(request: Request) -> str:
    return _path_value(request, "queue", QUEUE_NAME, validate_name, "invalid_queue_name")


def job_id_of(request: Request) -> str:
    return _path_value(request, "id", JOB_ID, validate_job_id, "invalid_job_id")


def group_of(request: Request) -> str:
    return _path_value(request, "group", GROUP_NAME, validate_group, "invalid_group")


@cache
def _field_types(model: type[BaseModel]) -> dict[str, str]:
    """Each query field's JSON type ("integer", "number", "boolean" or "string")."""
    properties = model.model_json_schema()["properties"]
    return {name: schema.get("type", "string") for name, schema in properties.items()}


def _query_value(name: str, text: str, kind: str) -> Any:
    if kind == "integer":
        if not _INTEGER.fullmatch(text):
            raise bad_request("invalid_parameter", f"{name} must be an integer, got {text!r}")
        return int(text)
    if kind == "boolean":
        if text not in ("true", "false"):
            raise bad_request("invalid_parameter", f"{name} must be true or false, got {text!r}")
        return text == "true"
    if kind == "number":
        if not _NUMBER.fullmatch(text):
            raise bad_request("invalid_parameter", f"{name} must be a number, got {text!r}")
        return float(text)
    return text


def query_of(request: Request, model: type[M]) -> M:
    """The query string as ``model``: its own fields only (others are ignored),
    each given at most once, numbers written as JSON writes them."""
    values: dict[str, Any] = {}
    for name, kind in _field_types(model).items():
        given = request.query_params.getlist(name)
        if len(given) > 1:
            raise bad_request("invalid_parameter", f"give {name} once, not {len(given)} times")
        if given:
            values[name] = _query_value(name, given[0], kind)
    try:
        return model.model_validate(values)
    except ValidationError as error:
        raise bad_request(_field_code(error, "invalid_parameter"), describe(error)) from None


async def body_of(request: Request, model: type[M], *, required: bool = True) -> M:
    """The body, a JSON object, as ``model`` (the guard has bounded its size);
    when not ``required``, an empty body reads as ``{}``. Its parser refuses
    what is not I-JSON (RFC 7493): NaN and Infinity, and a lone surrogate
    (``"\\ud800"``), which no UTF-8 text, and so no Redis string worqr writes,
    can hold."""
    body = await request.body()
    if not required and not body.strip():
        body = b"{}"
    try:
        value = from_json(body, allow_inf_nan=False)
    except ValueError as error:
        raise bad_request("invalid_json", f"the body is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise bad_request("invalid_json", "the body must be a JSON object")
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise bad_request(_body_code(error), describe(error)) from None


def _body_code(error: ValidationError) -> str:
    """``unknown_field``; a field's own code (`FIELD_CODES`) when it alone is
    wrong; else ``invalid_option``."""
    if any(item["type"] == "extra_forbidden" for item in error.errors()):
        return "unknown_field"
    return _field_code(error, "invalid_option")


def _field_code(error: ValidationError, otherwise: str) -> str:
    """A field's own code (`FIELD_CODES`) when it alone is wrong, else ``otherwise``."""
    items = error.errors()
    codes = {FIELD_CODES.get(str(item["loc"][0])) if item["loc"] else None for item in items}
    only = codes.pop() if len(codes) == 1 else None
    return only or otherwise


def _where(location: tuple[int | str, ...]) -> str:
    """A field's path without pydantic's union tags (``constrained-str``,
    ``none``, a model's class name): field names are lower case."""
    parts = [
        str(part)
        for part in location
        if isinstance(part, int) or (part.islower() and "-" not in part and "[" not in part)
    ]
    return ".".join(part for part in parts if part != "none")


def describe(error: ValidationError) -> str:
    """What was wrong, for a person: one clause per problem, most useful first."""
    clauses: list[str] = []
    for item in error.errors(include_url=False):
        if item["type"] == "none_required":
            continue  # the hidden "not given" branch of an optional field
        context = item.get("ctx") or {}
        message = str(context["error"]) if item["type"] == "value_error" else item["msg"]
        where = _where(item["loc"])
        clause = f"{where}: {message}" if where else message
        if clause not in clauses:
            clauses.append(clause)
    return "; ".join(clauses) or str(error)
