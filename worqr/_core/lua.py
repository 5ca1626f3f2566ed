"""Loads the Lua scripts and turns their error codes into worqr exceptions.

Each script lives in ``worqr/lua/<name>.lua``, one operation per file, headed by
its KEYS/ARGV contract. Pieces several scripts share live once in
``worqr/lua/lib/<piece>.lua``. A script names the pieces it uses with
``--!include <piece>`` lines, and a piece names the pieces it uses the same way:
when a script is first loaded, the include graph is resolved here, once, and
every piece the script needs is put in place of its first include line, each
once, each after the pieces it includes (so what Redis runs, and the SHA1 it
knows it by, is the expanded text). An unknown piece or a cycle is an
`IncludeError`. This is the one place that knows the error codes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from typing import Literal

from redis.exceptions import NoPermissionError, ResponseError

from .._errors import LeaseLostError, WorqrError, WrongQueueKindError
from .server_errors import server_error

INCLUDE = re.compile(r"^--!include (\w+)[ \t]*$", re.MULTILINE)
_ANY_INCLUDE = re.compile(r"^--!include\b.*$", re.MULTILINE)
_INCLUDE_LINE = re.compile(r"^--!include \w+[ \t]*(?:\n|$)", re.MULTILINE)


class IncludeError(ValueError):
    """A script or piece includes a piece that does not exist, or pieces include
    each other in a cycle (the message names the chain)."""


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


def includes(text: str) -> list[str]:
    """The pieces a script or piece names in its ``--!include`` lines, in order."""
    return INCLUDE.findall(text)


def include_order(wanted: Sequence[str], read: Callable[[str], str], who: str) -> list[str]:
    """Every piece `wanted` needs, each once, each after the pieces it includes
    (depth first, in the order the include lines name them). ``read`` gives a
    piece's text; ``who`` names the includer in errors."""
    order: list[str] = []
    done: set[str] = set()

    def visit(piece: str, path: tuple[str, ...]) -> None:
        if piece in done:
            return
        if piece in path:
            cycle = " -> ".join((*path[path.index(piece) :], piece))
            raise IncludeError(f"lua/lib pieces include each other: {cycle}")
        try:
            text = read(piece)
        except FileNotFoundError:
            includer = f"lua/lib/{path[-1]}.lua" if path else f"lua/{who}.lua"
            raise IncludeError(
                f"{includer} includes {piece!r}: there is no lua/lib/{piece}.lua"
            ) from None
        for needed in includes(text):
            visit(needed, (*path, piece))
        done.add(piece)
        order.append(piece)

    for piece in wanted:
        visit(piece, ())
    return order


def _checked(text: str, where: str) -> str:
    """``text``, once every line that starts ``--!include`` is a well-formed include."""
    for line in _ANY_INCLUDE.findall(text):
        if not INCLUDE.fullmatch(line):
            raise IncludeError(f"{where}: {line!r} is no include line (--!include <piece>)")
    return text


def expand(text: str, read: Callable[[str], str], who: str = "script") -> str:
    """``text`` with every piece it needs in place of its first include line, in
    dependency order, each once; the include lines themselves go."""
    head, pieces, rest = _parts(text, read, who)
    return head + pieces + rest


def _parts(text: str, read: Callable[[str], str], who: str) -> tuple[str, str, str]:
    """``text`` up to its first include line, the pieces it needs (each once, in
    dependency order), and the rest of it without its include lines."""
    first = INCLUDE.search(text)
    if first is None:
        return "", "", text
    texts: dict[str, str] = {}

    def once(piece: str) -> str:  # each piece read once, checked once
        if piece not in texts:
            texts[piece] = _checked(read(piece), f"lua/lib/{piece}.lua")
        return texts[piece]

    _checked(text, f"lua/{who}.lua")
    pieces = [
        _INCLUDE_LINE.sub("", once(piece)).rstrip("\n")
        for piece in include_order(includes(text), once, who)
    ]
    rest = _INCLUDE_LINE.sub("", text[first.start() :])
    return text[: first.start()], "\n".join(pieces) + "\n", rest


@cache
def source(name: str) -> str:
    """The text Redis runs: the script with the pieces it needs in place of its
    ``--!include`` lines (each once, after the pieces it includes)."""
    return expand(raw_source(name), raw_lib, name)


@cache
def digest(name: str) -> str:
    """The SHA1 Redis knows one script by (EVALSHA)."""
    return hashlib.sha1(source(name).encode("utf-8")).hexdigest()


READ_ONLY = frozenset({"history_read", "job_counts", "job_outbox_age"})
"""Scripts that never write: their functions are flagged ``no-writes``, so Redis
runs them where it refuses writes (a read-only replica, a failed RDB save, too
few replicas for ``min-replicas-to-write``), as it runs a script that only
reads. Unflagged, a function is refused there before it runs.
`tests/core/test_functions.py` checks this set against the commands each
script calls."""


@cache
def function_name(name: str) -> str:
    """The name of one script's Redis function, and of the library that holds
    it: the script's name and a digest of its text and flags (another worqr
    version's text is another library, so versions side by side never replace
    each other's)."""
    flagged = (source(name) + ("\n-- no-writes" if name in READ_ONLY else "")).encode("utf-8")
    return f"worqr_{name}_{hashlib.sha1(flagged).hexdigest()[:16]}"


@cache
def library(name: str) -> str:
    """One script as a Redis function library (Redis >= 7, ``FUNCTION LOAD``).

    A script's pieces are local functions, and ``EVALSHA`` defines them all
    again on every call: a fifth of a one-job `job_take`'s cost in Redis. In
    a library they are defined once, when it loads; the call runs only the
    script's own text, the body of the function ``FCALL`` names. A library's
    code sees no KEYS and ARGV globals, so they are locals of the library that
    the function sets first (the pieces read them as upvalues; Redis runs one
    call at a time)."""
    head, pieces, rest = _parts(raw_source(name), raw_lib, name)
    function = function_name(name)
    flags = ", flags={'no-writes'}" if name in READ_ONLY else ""
    return (
        f"#!lua name={function}\n"
        f"local KEYS, ARGV\n{head}{pieces}"
        f"redis.register_function{{function_name='{function}', callback=function(keys, args)\n"
        f"KEYS, ARGV = keys, args\n{rest}\nend{flags}}}\n"
    )


def function_error(error: ResponseError) -> Literal["missing", "loaded", "unsupported"] | None:
    """What an error of ``FCALL`` or ``FUNCTION LOAD`` says of functions:
    "missing" (Redis does not know this one), "loaded" (its library is there
    already), "unsupported" (no such commands: Redis 6.2; or the ACL user may
    not run them); None: another error (a script's own)."""
    text = str(error)
    if text.startswith("unknown command") or (
        isinstance(error, NoPermissionError) and ("'fcall'" in text or "'function" in text)
    ):
        return "unsupported"
    if text == "Function not found":
        return "missing"
    if text.startswith("Library ") and text.endswith(" already exists"):
        return "loaded"
    return None


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
