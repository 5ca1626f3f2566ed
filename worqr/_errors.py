"""The exceptions worqr raises. Lua error codes become these in `_core.lua` only."""

from __future__ import annotations

from redis.exceptions import ResponseError


class WorqrError(Exception):
    """Base class for every error worqr raises on purpose."""


class NotStartedError(WorqrError):
    """An operation that needs a registered worker was called before `start_worker()`."""


class LeaseLostError(WorqrError):
    """This worker was failed by its peers (its alive key expired).

    Its processes now belong to the queue again. The client re-registers under a
    new worker id on its next heartbeat; call the operation again after that.
    """


class AmbiguousResultError(WorqrError):
    """A non-idempotent command may or may not have been applied.

    Raised instead of resending (a resend could duplicate the task) when the
    connection failed after the command was sent, e.g. on a socket timeout.
    """


class RedisUnavailableError(WorqrError):
    """Redis could not be reached within the retry deadline; nothing was applied."""


class RedisBusyError(RedisUnavailableError, ResponseError):
    """Redis answered BUSY for the whole retry deadline: a script (or function)
    someone else runs has gone past Redis's time limit (``busy-reply-threshold``,
    ``lua-time-limit`` before 7.0), and Redis refuses every other command until it
    ends or is killed (``SCRIPT KILL``). Nothing was applied.

    Also a `redis.exceptions.ResponseError`, as the reply is on every server."""


class RedisPersistenceError(WorqrError, ResponseError):
    """Redis answered MISCONF: it cannot persist (an RDB snapshot or an AOF write
    failed: a full or read-only disk, for instance) and refuses every write until
    it can again (``stop-writes-on-bgsave-error``). Nothing was applied; Redis's
    log says why it cannot write.

    Also a `redis.exceptions.ResponseError`, as the reply is on every server."""


class ReplicationTimeoutError(WorqrError):
    """An enqueue was applied on the master, but fewer replicas than
    ``Settings.wait_replicas`` acknowledged it within ``Settings.wait_timeout``.

    The tasks ARE enqueued and will run unless the master fails before they
    reach a replica. Enqueueing them again would run them twice.

    Attributes: ``enqueued`` tasks of the call applied on the master (the last
    ``unconfirmed`` of them not confirmed replicated), ``replicas`` that
    acknowledged, ``required`` replicas asked for.
    """

    def __init__(
        self,
        message: str,
        *,
        enqueued: int = 0,
        unconfirmed: int = 0,
        replicas: int = 0,
        required: int = 0,
    ) -> None:
        super().__init__(message)
        self.enqueued = enqueued
        self.unconfirmed = unconfirmed
        self.replicas = replicas
        self.required = required


class WrongQueueKindError(WorqrError, ValueError):
    """A task operation on a job queue, or a job operation on a task queue: a
    queue holds tasks or jobs, never both (it becomes a job queue with its first
    job, while it holds no tasks). Nothing was written. ``queue_kind`` is what
    the queue is: "jobs" or "tasks"."""

    def __init__(self, message: str, *, queue_kind: str = "") -> None:
        super().__init__(message)
        self.queue_kind = queue_kind


class JobNotFoundError(WorqrError):
    """No such job: never submitted, or purged after its retention."""


class JobFailedError(WorqrError):
    """The job failed: ``error`` is its last error, ``"<ExceptionType>: <message>"``."""

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class JobCancelledError(WorqrError):
    """The job was cancelled."""


class QueueBusyError(WorqrError):
    """`delete_queue(queue, if_idle=True)` found a job (or task) in process on
    the queue, inside the deleting script: nothing was deleted."""
