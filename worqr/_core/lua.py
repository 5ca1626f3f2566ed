"""Loads the Lua scripts and turns their error codes into worqr exceptions.

Each script lives in ``worqr/lua/<name>.lua``, one operation per file, headed by
its KEYS/ARGV contract. This is the one place that knows the error codes.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

from redis.exceptions import ResponseError

from .._errors import LeaseLostError, WorqrError

SCRIPT_NAMES = (
    "add_worker_queue",
    "cancel",
    "complete",
    "dead_letter",
    "delete_queue",
    "dequeue",
    "enqueue",
    "finish",
    "forget_worker",
    "heartbeat",
    "join_queue",
    "purge_failed",
    "register",
    "requeue_failed",
    "requeue_owned",
    "stop",
)


class IdTakenError(WorqrError):
    """A worker id was registered twice (only a resend of `register` can do it)."""


class NotMemberError(LeaseLostError):
    """The worker may not dequeue from the queue: it was failed by its peers.

    (A worker whose lease is fine and finds itself no longer a member, because
    the queue was deleted before it heard so, joins again instead: `Core.dequeue`.)
    """


_ERRORS: dict[str, type[WorqrError]] = {
    "WORQR_NOT_MEMBER": NotMemberError,
    "WORQR_LEASE_LOST": LeaseLostError,
    "WORQR_ID_TAKEN": IdTakenError,
}

_MESSAGES = {
    "WORQR_NOT_MEMBER": "this worker may not dequeue from the queue: it was failed by its "
    "peers (it re-registers under a new id on its next heartbeat)",
    "WORQR_LEASE_LOST": "this worker's lease expired: it was failed by its peers",
    "WORQR_ID_TAKEN": "worker id already registered",
}


@cache
def source(name: str) -> str:
    """The text of one script."""
    return resources.files("worqr").joinpath("lua", f"{name}.lua").read_text("utf-8")


@cache
def digest(name: str) -> str:
    """The SHA1 Redis knows one script by (EVALSHA)."""
    return hashlib.sha1(source(name).encode("utf-8")).hexdigest()


def translate(error: ResponseError) -> Exception:
    """The worqr exception for a script's error reply, or the error itself."""
    code = str(error).split(" ", 1)[0]
    kind = _ERRORS.get(code)
    if kind is None:
        return error
    return kind(_MESSAGES[code])
