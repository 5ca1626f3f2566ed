"""Loads the Lua scripts and turns their error codes into worqr exceptions.

Each script lives in ``worqr/lua/<name>.lua``, one operation per file, headed by
its KEYS/ARGV contract. Pieces several scripts share live once in
``worqr/lua/lib/<piece>.lua`` and are pulled in by a ``--!include <piece>`` line,
expanded here when a script is first loaded (so what Redis runs, and the SHA1 it
knows it by, is the expanded text). This is the one place that knows the error
codes.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from importlib import resources

from redis.exceptions import ResponseError

from .._errors import LeaseLostError, WorqrError, WrongQueueKindError
from .server_errors import server_error

INCLUDE = re.compile(r"^--!include (\w+)[ \t]*$", re.MULTILINE)


class IdTakenError(WorqrError):
    """A worker id was registered twice (only a resend of `register` can do it)."""


class NotMemberError(LeaseLostError):
    """The worker may not dequeue from the queue: it was failed by its peers.

    (A worker whose lease is fine and finds itself no longer a member, because
    the queue was deleted before it heard so, joins again instead: see the
    dequeue plan.)
    """


_ERRORS: dict[str, type[WorqrError]] = {
    "WORQR_NOT_MEMBER": NotMemberError,
    "WORQR_LEASE_LOST": LeaseLostError,
    "WORQR_ID_TAKEN": IdTakenError,
    "WORQR_JOB_QUEUE": WrongQueueKindError,
    "WORQR_TASK_QUEUE": WrongQueueKindError,
}

_MESSAGES = {
    "WORQR_NOT_MEMBER": "this worker may not dequeue from the queue: it was failed by its "
    "peers (it re-registers under a new id on its next heartbeat)",
    "WORQR_LEASE_LOST": "this worker's lease expired: it was failed by its peers",
    "WORQR_ID_TAKEN": "worker id already registered",
    "WORQR_JOB_QUEUE": "this queue is a job queue: use submit() and job handlers "
    "(@worker.job), not enqueue() and task handlers",
    "WORQR_TASK_QUEUE": "this queue holds tasks (it is a task queue): use enqueue() and task "
    "handlers (@worker.handler), or a queue of its own for jobs",
}


def _read(*parts: str) -> str:
    return resources.files("worqr").joinpath("lua", *parts).read_text("utf-8")


def script_names() -> list[str]:
    """Every script's name (the ``.lua`` files, without the shared pieces)."""
    folder = resources.files("worqr").joinpath("lua")
    return sorted(item.name[:-4] for item in folder.iterdir() if item.name.endswith(".lua"))


def lib_pieces() -> list[str]:
    """The shared pieces scripts may include (``lua/lib/*.lua``)."""
    folder = resources.files("worqr").joinpath("lua", "lib")
    return sorted(item.name[:-4] for item in folder.iterdir() if item.name.endswith(".lua"))


def raw_lib(piece: str) -> str:
    """A shared piece's text (``lua/lib/<piece>.lua``)."""
    return _read("lib", f"{piece}.lua")


def raw_source(name: str) -> str:
    """A script's own text, with its ``--!include`` lines unexpanded."""
    return _read(f"{name}.lua")


@cache
def source(name: str) -> str:
    """The text Redis runs: the script with each included piece in place of its
    ``--!include`` line (each piece once, even when pieces include pieces)."""
    included: set[str] = set()

    def expand(text: str) -> str:
        def piece(match: re.Match[str]) -> str:
            wanted = match.group(1)
            if wanted in included:
                return f"-- ({wanted} is included above)"
            included.add(wanted)
            return expand(_read("lib", f"{wanted}.lua")).rstrip("\n")

        return INCLUDE.sub(piece, text)

    return expand(raw_source(name))


@cache
def digest(name: str) -> str:
    """The SHA1 Redis knows one script by (EVALSHA)."""
    return hashlib.sha1(source(name).encode("utf-8")).hexdigest()


def translate(error: ResponseError) -> Exception:
    """The worqr exception for a script's error reply; for an error Redis itself
    answered, the class it gets on every server (`server_errors`)."""
    code = str(error).split(" ", 1)[0]
    kind = _ERRORS.get(code)
    if kind is None:
        return server_error(error)
    if kind is WrongQueueKindError:
        return WrongQueueKindError(
            _MESSAGES[code], queue_kind="jobs" if code == "WORQR_JOB_QUEUE" else "tasks"
        )
    return kind(_MESSAGES[code])
