"""What the API takes, as pydantic models (its answers: `replies`): the one source of both
the checks every request passes and the OpenAPI document (`openapi`).

Every bound comes from the library's own constants (`worqr._checks`, the name
and id rules of `rules`, page sizes, rate bounds), so a request these models accept is
one the library accepts, and the document states exactly what is enforced.
Request models are strict (a number is a JSON number, never a string) and
refuse unknown fields; a field not given takes its default, and ``null`` is
refused wherever it has no meaning of its own.

Why pydantic (see docs/design.md): it validates and writes JSON Schema
(draft 2020-12, OpenAPI 3.1's dialect) from the same declarations, and FastAPI
users know it; msgspec is faster but writes only the schema of its types, not
of cross-field rules like "payload or payload_b64".
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from .._checks import MAX_COUNT, MAX_EPOCH_SECONDS, MAX_SECONDS
from .._core.job_logs import MAX_LOG_LINES
from .._core.jobs_read import MAX_PAGE
from .._core.jobs_submit import MAX_PRIORITY
from .._core.limits import MAX_RATE_SECONDS, MIN_RATE_SECONDS, UNSET
from .._dedup import Dedup
from .._jobs import LISTED_STATES, MAX_BACKOFF_FACTOR, Backoff
from .._schedules import MAX_SCHEDULE_NAME
from .config import MAX_WAIT_SECONDS
from .rules import (
    CURSOR_PATTERN,
    SCHEDULE_NAME_PATTERN,
    STRICT,
    WHOLE,
    Base64,
    GroupName,
    JobId,
    PositiveSeconds,
    Seconds,
    seconds,
)

FIELD_CODES = {"group": "invalid_group", "dedup": "invalid_dedup"}
"""The error code of a body whose only bad field is one of these (else
``invalid_option``)."""

# -- requests ---------------------------------------------------------------


class NoNulls(BaseModel):
    """A body whose fields are left out rather than set to null: null is
    refused, so "given" has one meaning (and `oneOf` rules hold)."""

    model_config = STRICT

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            nulls = sorted(name for name, value in data.items() if value is None)
            if nulls:
                raise ValueError(f"leave out {', '.join(nulls)} instead of sending null")
        return data


def exactly_one(*names: str) -> dict[str, Any]:
    """JSON Schema: exactly one of ``names`` is given."""
    return {"oneOf": [{"required": [name]} for name in names]}


def given(model: BaseModel, *names: str) -> list[str]:
    return [name for name in names if name in model.model_fields_set]


def text_or_bytes(text: str | None, b64: str | None) -> str | bytes:
    """A value given as text, or as base64 (already checked by its pattern)."""
    if text is not None:
        return text
    assert b64 is not None
    return base64.b64decode(b64, validate=True)


class BackoffBody(NoNulls):
    """An exponential backoff: ``min(max, base * factor ** (failures - 1))``,
    less up to ``jitter`` of it at random."""

    base: Seconds = 1.0
    factor: Annotated[float, Field(ge=1, le=MAX_BACKOFF_FACTOR, allow_inf_nan=False)] = 2.0
    max: Seconds = 600.0
    jitter: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.5


class DedupBody(NoNulls):
    """A dedup key and its mode (`worqr.Dedup`): ``ttl`` seconds with
    ``throttle`` (the default mode) and only there."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["ttl"], "properties": {"mode": {"const": "throttle"}}},
                {
                    "required": ["mode"],
                    "properties": {"mode": {"enum": ["debounce", "keep_last"]}},
                    "not": {"required": ["ttl"]},
                },
            ],
            "examples": [{"key": "reindex-42", "mode": "debounce"}, {"key": "digest", "ttl": 60}],
        }
    )

    key: JobId
    ttl: PositiveSeconds | SkipJsonSchema[None] = Field(
        None, description="seconds a throttle lasts from the submit that created its job"
    )
    mode: Literal["throttle", "debounce", "keep_last"] = "throttle"

    @model_validator(mode="after")
    def _ttl_with_throttle(self) -> DedupBody:
        if self.mode == "throttle" and self.ttl is None:
            raise ValueError("dedup mode 'throttle' needs a ttl (seconds)")
        if self.mode != "throttle" and self.ttl is not None:
            raise ValueError(f"dedup mode {self.mode!r} takes no ttl (throttle only)")
        return self

    def value(self) -> Dedup:
        return Dedup(self.key, ttl=self.ttl, mode=self.mode)


class SubmitBody(NoNulls):
    """A job: ``payload`` (text) or ``payload_b64`` (bytes), and its options."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                exactly_one("payload", "payload_b64"),
                {"not": {"required": ["delay", "at"]}},
                {"not": {"required": ["dedup", "id"]}},
                {
                    "not": {
                        "required": ["dedup", "unique"],
                        "properties": {"unique": {"const": True}},
                    }
                },
            ],
            "examples": [
                {"payload": "alice@example.com", "id": "welcome-alice"},
                {"payload": "bob@example.com", "delay": 3600, "retries": 2, "result_ttl": 60},
                {"payload_b64": "AAEC/w==", "priority": 5, "backoff": {"base": 1, "max": 60}},
                {"payload": "index 42", "delay": 5, "dedup": {"key": "42", "mode": "debounce"}},
            ],
        }
    )

    payload: str | SkipJsonSchema[None] = None
    payload_b64: Base64 | SkipJsonSchema[None] = None
    id: JobId | SkipJsonSchema[None] = Field(None, description="default: a new id")
    delay: Seconds | SkipJsonSchema[None] = Field(None, description="seconds until due")
    at: Annotated[float, seconds(high=MAX_EPOCH_SECONDS)] | SkipJsonSchema[None] = Field(
        None, description="when it is due: epoch seconds on Redis's clock"
    )
    priority: Annotated[int, Field(ge=-MAX_PRIORITY, le=MAX_PRIORITY), WHOLE] = 0
    unique: bool = Field(False, description="at most one live job with this payload")
    group: GroupName | SkipJsonSchema[None] = Field(
        None, description="its fair-share group: one job of each group is taken in turn"
    )
    retries: Annotated[int, Field(ge=0, le=MAX_COUNT), WHOLE] | SkipJsonSchema[None] = None
    backoff: Seconds | BackoffBody | SkipJsonSchema[None] = Field(
        None, description="fixed seconds, or an exponential backoff"
    )
    timeout: PositiveSeconds | SkipJsonSchema[None] = None
    result_ttl: Seconds | SkipJsonSchema[None] = None
    dedup: DedupBody | SkipJsonSchema[None] = Field(
        None, description="a dedup key: not with id or unique (docs/jobs.md#deduplication)"
    )

    @field_validator("dedup")
    @classmethod
    def _dedup_alone(cls, dedup: DedupBody | None, info: ValidationInfo) -> DedupBody | None:
        if dedup is not None and info.data.get("id") is not None:
            raise ValueError("dedup takes no id: the key names the job (give one or the other)")
        if dedup is not None and info.data.get("unique"):
            raise ValueError("give dedup or unique, not both")
        return dedup

    @model_validator(mode="after")
    def _one_payload_one_due(self) -> SubmitBody:
        if len(given(self, "payload", "payload_b64")) != 1:
            raise ValueError("give payload (text) or payload_b64 (base64): one of them")
        if len(given(self, "delay", "at")) > 1:
            raise ValueError("give delay or at, not both")
        return self

    def value(self) -> str | bytes:
        return text_or_bytes(self.payload, self.payload_b64)

    def options(self) -> dict[str, Any]:
        """The keyword arguments of `submit` given in this body."""
        names = (
            "id",
            "delay",
            "at",
            "priority",
            "unique",
            "group",
            "retries",
            "timeout",
            "result_ttl",
        )
        options = {name: getattr(self, name) for name in given(self, *names)}
        if isinstance(self.backoff, BackoffBody):
            options["backoff"] = Backoff(**self.backoff.model_dump())
        elif self.backoff is not None:
            options["backoff"] = self.backoff
        if self.dedup is not None:
            options["dedup"] = self.dedup.value()
        return options


TaskList = Annotated[list[str], Field(min_length=1)]
Base64List = Annotated[list[Base64], Field(min_length=1)]


class EnqueueBody(NoNulls):
    """Tasks for the back of a task queue: one (``task``) or a list
    (``tasks``), as text or as base64 bytes (``*_b64``)."""

    model_config = ConfigDict(
        json_schema_extra={
            **exactly_one("task", "task_b64", "tasks", "tasks_b64"),
            "examples": [{"task": "resize cat.png"}, {"tasks": ["a", "b"]}],
        }
    )

    task: str | SkipJsonSchema[None] = None
    task_b64: Base64 | SkipJsonSchema[None] = None
    tasks: TaskList | SkipJsonSchema[None] = None
    tasks_b64: Base64List | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _one_field(self) -> EnqueueBody:
        if len(given(self, "task", "task_b64", "tasks", "tasks_b64")) != 1:
            raise ValueError("give one of task, task_b64, tasks or tasks_b64")
        return self

    def values(self) -> list[str | bytes]:
        """The tasks, in order."""
        if self.tasks is not None:
            return list(self.tasks)
        if self.tasks_b64 is not None:
            return [base64.b64decode(value) for value in self.tasks_b64]
        return [text_or_bytes(self.task, self.task_b64)]


class CancelTasksBody(NoNulls):
    """The task whose every copy is cancelled, as text or base64."""

    model_config = ConfigDict(
        json_schema_extra={**exactly_one("task", "task_b64"), "examples": [{"task": "a"}]}
    )

    task: str | SkipJsonSchema[None] = None
    task_b64: Base64 | SkipJsonSchema[None] = None

    @model_validator(mode="after")
    def _one_field(self) -> CancelTasksBody:
        if len(given(self, "task", "task_b64")) != 1:
            raise ValueError("give task (text) or task_b64 (base64): one of them")
        return self

    def value(self) -> str | bytes:
        return text_or_bytes(self.task, self.task_b64)


class Rate(BaseModel):
    """At most ``starts`` job starts in any ``seconds``, spaced evenly."""

    model_config = STRICT

    starts: Annotated[int, Field(ge=1, le=MAX_COUNT), WHOLE]
    seconds: Annotated[float, Field(ge=MIN_RATE_SECONDS, le=MAX_RATE_SECONDS, allow_inf_nan=False)]


class LimitsBody(BaseModel):
    """A change of a job queue's limits: a field left out stays as it is,
    null removes it."""

    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "examples": [{"rate": {"starts": 20, "seconds": 1}, "max_active": 5}, {"rate": None}]
        },
    )

    rate: Rate | None = None
    max_active: Annotated[int, Field(ge=1, le=MAX_COUNT), WHOLE] | None = None

    def changes(self) -> dict[str, Any]:
        """``rate`` and ``max_active`` as `configure_queue` takes them (UNSET: not given)."""
        changes: dict[str, Any] = {"rate": UNSET, "max_active": UNSET}
        if "rate" in self.model_fields_set:
            changes["rate"] = None if self.rate is None else (self.rate.starts, self.rate.seconds)
        if "max_active" in self.model_fields_set:
            changes["max_active"] = self.max_active
        return changes


class PauseBody(NoNulls):
    """What to pause or resume: the queue (no body, or no field), one of its
    fair-share groups, or one of its schedules."""

    model_config = ConfigDict(
        **STRICT,
        json_schema_extra={
            "not": {"required": ["group", "schedule"]},
            "examples": [{}, {"group": "acme"}, {"schedule": "nightly"}],
        },
    )

    group: GroupName | SkipJsonSchema[None] = None

    schedule: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_SCHEDULE_NAME,
                pattern=SCHEDULE_NAME_PATTERN,
                description="a schedule of the queue",
            ),
        ]
        | SkipJsonSchema[None]
    ) = None

    @model_validator(mode="after")
    def _group_or_schedule(self) -> PauseBody:
        if len(given(self, "group", "schedule")) > 1:
            raise ValueError("give group or schedule, not both")
        return self


# -- query strings ------------------------------------------------------------

Limit = Annotated[int, Field(ge=1, le=MAX_PAGE, description="page size"), WHOLE]
Cursor = Annotated[str, Field(pattern=CURSOR_PATTERN, description="from the previous page")]
JobStateName = Literal[
    "delayed", "queued", "active", "retrying", "waiting", "finished", "failed", "cancelled"
]
assert set(JobStateName.__args__) == set(LISTED_STATES)  # type: ignore[attr-defined]


class ListJobsQuery(BaseModel):
    model_config = STRICT

    state: JobStateName
    limit: Limit = 100
    cursor: Cursor | SkipJsonSchema[None] = None
    group: GroupName | SkipJsonSchema[None] = Field(
        default=None, description="only this fair-share group's jobs"
    )


class PageQuery(BaseModel):
    model_config = STRICT

    limit: Limit = 100
    cursor: Cursor | SkipJsonSchema[None] = None


class LogQuery(BaseModel):
    model_config = STRICT

    limit: Annotated[
        int,
        Field(ge=1, le=MAX_LOG_LINES, description="the newest lines, at most this many"),
        WHOLE,
    ] = 100


class WaitQuery(BaseModel):
    model_config = STRICT

    wait: Annotated[
        float,
        Field(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False, description="seconds to wait"),
    ] = 0.0


# -- bulk operations and update ------------------------------------------------

LiveState = Literal["delayed", "queued", "retrying", "active"]
BulkLimit = Annotated[int, Field(ge=1, le=MAX_COUNT, description="at most this many jobs"), WHOLE]


class CancelJobsBody(NoNulls):
    """Which jobs to cancel: those in ``state``; every job not terminal when left out."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}, {"state": "queued"}]})

    state: LiveState | SkipJsonSchema[None] = None
    group: GroupName | SkipJsonSchema[None] = Field(
        default=None, description="only this fair-share group's jobs (every group when left out)"
    )


class RetryJobsBody(NoNulls):
    """Which jobs get a new life: ``state`` failed or cancelled (both when left
    out), at most ``limit``."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}, {"state": "failed"}]})

    state: Literal["failed", "cancelled"] | SkipJsonSchema[None] = None
    limit: BulkLimit | SkipJsonSchema[None] = None


class PromoteJobsBody(NoNulls):
    """At most ``limit`` delayed jobs, soonest due first (all when left out)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{}, {"limit": 100}]})

    limit: BulkLimit | SkipJsonSchema[None] = None


class PurgeJobsQuery(BaseModel):
    model_config = STRICT

    state: Literal["finished", "failed", "cancelled"]
    older_than: Annotated[
        float, Field(ge=0, le=MAX_SECONDS, allow_inf_nan=False, description="seconds ago, at least")
    ] = 0.0
    limit: BulkLimit | SkipJsonSchema[None] = None


class UpdateJobBody(NoNulls):
    """What changes in a delayed, queued or retrying job; a field left out stays."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {"not": {"required": ["payload", "payload_b64"]}},
                {"not": {"required": ["delay", "at"]}},
            ],
            "examples": [{"priority": 5}, {"payload": "new", "delay": 60}],
        }
    )

    payload: str | SkipJsonSchema[None] = None
    payload_b64: Base64 | SkipJsonSchema[None] = None
    priority: (
        Annotated[int, Field(ge=-MAX_PRIORITY, le=MAX_PRIORITY), WHOLE] | SkipJsonSchema[None]
    ) = None
    delay: Seconds | SkipJsonSchema[None] = Field(None, description="seconds from now until due")
    at: Annotated[float, seconds(high=MAX_EPOCH_SECONDS)] | SkipJsonSchema[None] = Field(
        None, description="when it is due: epoch seconds on Redis's clock"
    )

    @model_validator(mode="after")
    def _one_payload_one_due(self) -> UpdateJobBody:
        if len(given(self, "payload", "payload_b64")) > 1:
            raise ValueError("give payload (text) or payload_b64 (base64), not both")
        if len(given(self, "delay", "at")) > 1:
            raise ValueError("give delay or at, not both")
        return self

    def changes(self) -> dict[str, Any]:
        """The keyword arguments of `update_job` given in this body."""
        changes = {name: getattr(self, name) for name in given(self, "priority", "delay", "at")}
        if given(self, "payload", "payload_b64"):
            changes["payload"] = text_or_bytes(self.payload, self.payload_b64)
        return changes


class DeleteQueueQuery(BaseModel):
    model_config = STRICT

    if_idle: bool = Field(False, description="refuse (409 queue_busy) while a job is in process")
