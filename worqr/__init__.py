"""worqr: distributed work over Redis.

A mesh of workers that register in Redis, keep a lease alive with heartbeats,
hear about work over pub/sub, and fail each other's dead members by returning
their tasks to the front of the queue.
"""

from ._clients.async_client import AsyncWorqr
from ._clients.sync_client import Worqr
from ._core.groups import GroupInfo
from ._core.history_model import HistoryPoint
from ._core.limits import QueueLimits
from ._dedup import Dedup
from ._errors import (
    AmbiguousResultError,
    JobCancelledError,
    JobFailedError,
    JobNotFoundError,
    LeaseLostError,
    NotStartedError,
    QueueBusyError,
    RedisBusyError,
    RedisPersistenceError,
    RedisUnavailableError,
    ReplicationTimeoutError,
    WorqrError,
    WrongQueueKindError,
)
from ._flows import ChildOutcome, FlowInfo, FlowJob, FlowRef, Step
from ._hooks import JOB_RUN_OUTCOMES, Hooks, JobRun
from ._jobs import Backoff, JobInfo, JobRef, JobSettings
from ._keys import MAX_NAME_CHARS, validate_name
from ._process import Process
from ._runtime.context import ProcessContext, RateLimited, Retry, current_process
from ._runtime.job_context import Fail, JobContext, current_job
from ._runtime.settings import WorkerSettings
from ._runtime.worker import Worker
from ._schedules import ScheduleInfo
from ._settings import Settings
from ._version import __version__

__all__ = [
    "JOB_RUN_OUTCOMES",
    "MAX_NAME_CHARS",
    "AmbiguousResultError",
    "AsyncWorqr",
    "Backoff",
    "ChildOutcome",
    "Dedup",
    "Fail",
    "FlowInfo",
    "FlowJob",
    "FlowRef",
    "GroupInfo",
    "HistoryPoint",
    "Hooks",
    "JobCancelledError",
    "JobContext",
    "JobFailedError",
    "JobInfo",
    "JobNotFoundError",
    "JobRef",
    "JobRun",
    "JobSettings",
    "LeaseLostError",
    "NotStartedError",
    "Process",
    "ProcessContext",
    "QueueBusyError",
    "QueueLimits",
    "RateLimited",
    "RedisBusyError",
    "RedisPersistenceError",
    "RedisUnavailableError",
    "ReplicationTimeoutError",
    "Retry",
    "ScheduleInfo",
    "Settings",
    "Step",
    "Worker",
    "WorkerSettings",
    "Worqr",
    "WorqrError",
    "WrongQueueKindError",
    "__version__",
    "current_job",
    "current_process",
    "validate_name",
]
