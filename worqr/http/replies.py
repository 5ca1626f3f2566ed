"""What the API answers, as pydantic models: the OpenAPI document's response
schemas (`openapi`) and what every endpoint builds its JSON from (`reply` in
`operations`), so an answer always has the shape the document gives it."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Time = Annotated[float | None, Field(description="Redis server epoch seconds")]


class Reply(BaseModel):
    """An answer: written with only the fields set (a ``*_b64`` field stands
    in for its text twin when the value is bytes)."""

    model_config = ConfigDict(extra="forbid")


class ErrorDetail(Reply):
    code: str = Field(description="stable: clients branch on it")
    message: str = Field(description="for a person")


class ErrorReply(Reply):
    error: ErrorDetail


class SubmitReply(Reply):
    id: str
    duplicate: bool = Field(description="a live job with this id (or payload, unique) exists")


class JobReply(Reply):
    """A job's record; payload and result only with ``--show-payloads``."""

    id: str
    queue: str
    state: Literal[
        "delayed", "queued", "active", "retrying", "waiting", "finished", "failed", "cancelled"
    ]
    attempts: int
    error: str | None
    created: float = Field(description="Redis server epoch seconds")
    started: Time
    ended: Time
    due: Time
    group: str | None = Field(None, description="its fair-share group (left out: none)")
    progress: str | None = None
    progress_b64: str | None = None
    payload: str | None = None
    payload_b64: str | None = None
    result: str | None = None
    result_b64: str | None = None


class JobPage(Reply):
    jobs: list[JobReply]
    cursor: str | None = Field(description="the next page's; null on the last")


class StateReply(Reply):
    id: str
    state: str


class JobLogReply(Reply):
    """The newest lines of the job's log (``current_job().log``), oldest first."""

    id: str
    lines: list[str]


class ResultReply(Reply):
    """The job ended (``result`` or ``result_b64`` when finished, else its
    ``error``), or it has not yet (202: its ``state`` alone)."""

    id: str
    state: str
    result: str | None = None
    result_b64: str | None = None
    error: str | None = None


class JobCounts(Reply):
    delayed: int
    queued: int
    active: int
    retrying: int
    finished: int
    failed: int
    cancelled: int
    waiting: int | None = Field(
        default=None,
        description="flow parents and keep_last follow-ups; only once the queue has had such jobs",
    )


class QueueRow(Reply):
    name: str
    kind: Literal["jobs", "tasks"]
    jobs: JobCounts | None = None
    tasks: int | None = None
    processes: int
    failed: int


class QueuesReply(Reply):
    queues: list[QueueRow]


class WorkerRow(Reply):
    id: str
    alive: bool = Field(description="false: dead, not yet failed by its peers")
    host: str | None
    pid: int | None
    queues: list[str]


class WorkersReply(Reply):
    workers: list[WorkerRow]


class EnqueueReply(Reply):
    enqueued: int


class CancelledReply(Reply):
    cancelled: int


class TaskValue(Reply):
    task: str | None = None
    task_b64: str | None = None


class DeadLettersReply(Reply):
    """A job queue's failed jobs (``jobs``, ``cursor``), or a task queue's
    dead letters (``count``, and ``tasks`` with ``--show-payloads``)."""

    kind: Literal["jobs", "tasks"]
    jobs: list[JobReply] | None = None
    cursor: str | None = None
    count: int | None = None
    tasks: list[TaskValue] | None = None


class RedrivenReply(Reply):
    redriven: int


class PurgedReply(Reply):
    purged: int


class RetriedReply(Reply):
    retried: int


class PromotedReply(Reply):
    promoted: int


class DeletedReply(Reply):
    deleted: str = Field(description="the queue")


class RateReply(Reply):
    starts: int
    seconds: float


class LimitsReply(Reply):
    rate: RateReply | None
    max_active: int | None
    active: int
    closed_until: Time
    limited: bool = Field(description="the limits keep a job from starting now")
    paused: bool = Field(description="paused: no job starts until it is resumed")


class PausedReply(Reply):
    paused: bool = Field(description="the queue, its group or its schedule is paused now")
    group: str | None = None  # the group, when the request named one
    schedule: str | None = None  # the schedule, when the request named one


class GroupReply(Reply):
    """A fair-share group of a job queue: its jobs, the limits in force (its
    own, else the queue's for every group) and whether they hold it back now."""

    name: str
    queued: int
    delayed: int = Field(description="delayed or retrying")
    active: int
    paused: bool
    rate: RateReply | None
    max_active: int | None
    closed_until: Time
    limited: bool = Field(description="its limits keep a job from starting now")


class GroupPage(Reply):
    groups: list[GroupReply]
    cursor: str | None = Field(description="the next page's; null on the last")
