"""Reading a request: path names, query numbers, a JSON body of known fields,
and payloads (text, or bytes as base64). Everything is checked here, before a
route calls the library, so a bad request writes nothing."""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Collection
from typing import Any

from starlette.requests import Request

from .._jobs import validate_job_id
from .._keys import validate_name
from .errors import bad_request
from .paths import path_name


def queue_of(request: Request) -> str:
    try:
        return validate_name(path_name(request, "queue"), "queue name")
    except (TypeError, ValueError) as error:
        raise bad_request("invalid_queue_name", str(error)) from None


def job_id_of(request: Request) -> str:
    try:
        return validate_job_id(path_name(request, "id"))
    except (TypeError, ValueError) as error:
        raise bad_request("invalid_job_id", str(error)) from None


def query_number(request: Request, name: str, default: float, *, low: float, high: float) -> float:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise bad_request("invalid_parameter", f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise bad_request(
            "invalid_parameter", f"{name} must be from {low:g} to {high:g}, got {raw}"
        )
    return value


def query_int(request: Request, name: str, default: int, *, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.lstrip("-").isdigit() or not low <= int(raw) <= high:
        raise bad_request("invalid_parameter", f"{name} must be an integer from {low} to {high}")
    return int(raw)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


async def json_object(request: Request, fields: Collection[str]) -> dict[str, Any]:
    """The body as a JSON object holding only ``fields`` (400 otherwise)."""
    body = await request.body()  # the guard has bounded it
    try:
        value = json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as error:
        raise bad_request("invalid_json", f"the body is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise bad_request("invalid_json", "the body must be a JSON object")
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise bad_request(
            "unknown_field",
            f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(fields))}",
        )
    return value


def _decoded(name: str, value: object) -> str | bytes:
    """A value given as ``name`` (text) or ``name_b64`` (bytes, base64)."""
    if not isinstance(value, str):
        raise bad_request("invalid_option", f"{name} must be a string, not {_json_type(value)}")
    if not name.endswith("_b64"):
        return value
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise bad_request("invalid_option", f"{name} is not valid base64") from None


def one_value(body: dict[str, Any], name: str) -> str | bytes:
    """The value of ``name`` or ``name_b64``: exactly one must be given."""
    given = [key for key in (name, f"{name}_b64") if key in body]
    if len(given) != 1:
        raise bad_request(
            "invalid_option", f"give {name} (text) or {name}_b64 (base64): one of them"
        )
    return _decoded(given[0], body[given[0]])


def many_values(body: dict[str, Any], name: str) -> list[str | bytes]:
    """A non-empty list under ``name`` or ``name_b64``: exactly one must be given."""
    given = [key for key in (name, f"{name}_b64") if key in body]
    if len(given) != 1:
        raise bad_request("invalid_option", f"give {name} or {name}_b64: one of them")
    values = body[given[0]]
    if not isinstance(values, list) or not values:
        raise bad_request("invalid_option", f"{given[0]} must be a non-empty list")
    return [_decoded(given[0], value) for value in values]


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an array" if isinstance(value, list) else "an object"
