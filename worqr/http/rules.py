"""The rules of names and values every request obeys, as JSON Schema keywords
and pydantic types (`models` builds the request models on them; `inputs` and
`openapi` check and document path parameters with the adapters).

Every bound comes from the library's own constants (`worqr._checks`, the name
and id rules), so a value these accept is one the library accepts.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, TypeAdapter

from .._checks import MAX_SECONDS
from .._jobs import MAX_ID_CHARS
from .._keys import MAX_NAME_CHARS

# -- the rules of names and values, as JSON Schema keywords ---------------------

NAME_PATTERN = r"^[^{}\u0000-\u001f\u007f-\u009f]+$"
"""`worqr.validate_name`: no braces (they would change the hash tag) and no
control character (Unicode's Cc). Its third rule, no lone surrogate (Cs),
needs no pattern: a URL's UTF-8 cannot carry one, and the body's JSON parser
refuses one (a pattern naming surrogates is one many regex engines, Rust's
and so fuzzers', cannot compile)."""

JOB_ID_PATTERN = r"^[^\u0000-\u001f\u007f]+$"
"""`validate_job_id`: no ASCII control character (and no lone surrogate, as
for names)."""

SCHEDULE_NAME_PATTERN = JOB_ID_PATTERN
"""`validate_schedule_name`: no ASCII control character, as for job ids."""

BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
"""Standard base64 with its padding, as ``base64.b64decode(validate=True)`` takes it."""

CURSOR_PATTERN = r"^[0-9]{1,19}$"
"""`get_jobs`'s cursor: decimal digits, below 2**64 (any such cursor is valid
for every state; one past the end gives an empty last page)."""

STRICT = ConfigDict(extra="forbid", strict=True)

QueueName = Annotated[
    str,
    Field(
        min_length=1, max_length=MAX_NAME_CHARS, pattern=NAME_PATTERN, examples=["emails", "a/b"]
    ),
]
JobId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        pattern=JOB_ID_PATTERN,
        examples=["welcome-alice", "01M8S9044W9553V015YAA969M0"],
    ),
]
GroupName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        pattern=JOB_ID_PATTERN,
        description="a fair-share group (the job-id rules)",
        examples=["acme", "tenant-42"],
    ),
]
Base64 = Annotated[
    str,
    Field(
        pattern=BASE64_PATTERN,
        json_schema_extra={"format": "byte", "contentEncoding": "base64"},
    ),
]


def _whole_number(value: Any) -> Any:
    """A float with no fraction as an int: JSON Schema's ``integer`` is a
    number with no fraction, so ``1.0`` is one (a string or a bool is not)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE = BeforeValidator(_whole_number)
"""After an int field's bounds (``Annotated[int, Field(...), WHOLE]``): before
them, pydantic would not write the bounds into the schema."""


def seconds(*, above: bool = False, high: float = MAX_SECONDS) -> Any:
    """A field of seconds: a finite JSON number in the library's bounds."""
    if above:
        return Field(gt=0, le=high, allow_inf_nan=False)
    return Field(ge=0, le=high, allow_inf_nan=False)


Seconds = Annotated[float, seconds()]
PositiveSeconds = Annotated[float, seconds(above=True)]

QUEUE_NAME: TypeAdapter[str] = TypeAdapter(QueueName, config=STRICT)
JOB_ID: TypeAdapter[str] = TypeAdapter(JobId, config=STRICT)
GROUP_NAME: TypeAdapter[str] = TypeAdapter(GroupName, config=STRICT)
