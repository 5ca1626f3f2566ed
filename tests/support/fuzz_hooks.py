"""Schemathesis hooks of the fuzz harness (`tests.support.fuzz`), loaded by
the `st run` subprocess through its config file's ``hooks`` key.

One hook, so that a run stays short: ``GET .../result?wait=S`` holds the
request for up to S seconds (the document allows up to 60) while the job has
not ended, and in the stateful phase the job is a live one the scenario just
submitted, which no worker runs. A ``wait`` the document accepts is sent as
at most `MAX_WAIT` seconds instead: still a valid wait, still the server's
waiting path (a 202 after it), but a 30-second draw no longer costs 30
seconds, or a read timeout. A value the document rejects (negative, too big,
not a number) is sent as generated; a number over `MAX_WAIT` whose validity
this hook cannot read from the document is shortened too (Schemathesis then
judges the request by the value sent).
"""

from __future__ import annotations

import math
from typing import Any

import schemathesis
from jsonschema import Draft202012Validator

MAX_WAIT = 0.2
"""Longest ``wait`` sent, in seconds."""

WAIT = "wait"


def _documented(case: Any, name: str) -> dict[str, Any] | None:
    """The schema of the query parameter ``name`` of the case's operation."""
    for parameter in case.operation.query:
        if parameter.name == name:
            schema = parameter.definition.get("schema")
            return schema if isinstance(schema, dict) else None
    return None


def _number(value: object) -> float | None:
    """``value`` as a finite number: a JSON number, or a string that reads as
    one (the coverage phase sends some query values as their text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _accepts(case: Any, schema: dict[str, Any], value: float) -> bool | None:
    """Whether ``schema`` accepts ``value``; None when it cannot be read. Its
    ``$ref``s resolve in the whole document, which is the validator's root
    (the document's own keys are no JSON Schema keywords)."""
    try:
        document = case.operation.schema.raw_schema
        root = {**document, **schema} if isinstance(document, dict) else schema
        return bool(Draft202012Validator(root).is_valid(value))
    except Exception:
        return None


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    query = case.query
    if not isinstance(query, dict) or WAIT not in query:
        return
    wait = _number(query[WAIT])
    if wait is None or wait <= MAX_WAIT:
        return
    schema = _documented(case, WAIT)
    if schema is not None:
        valid, shorter_valid = _accepts(case, schema, wait), _accepts(case, schema, MAX_WAIT)
        if valid is False or shorter_valid is False:
            return  # sent as generated: the document rejects it (or the shorter one)
    query[WAIT] = str(MAX_WAIT) if isinstance(query[WAIT], str) else MAX_WAIT
