"""What a child's answer means in the worker: the handler's return value, or
the exception it raised, rebuilt so that the runtime's outcome policy reads it
as it reads an in-process handler's.

worqr's own exceptions come back as themselves (`Retry` with its delay,
`RateLimited`, `Fail`). Any other comes back as a `ChildError` subclass named
and placed as the original type (``ValueError`` of ``builtins``), so that the
job's error reads ``"ValueError: ..."`` exactly as in process, and nothing is
ever unpickled. A value no job may return comes back as an object of a class
of the same name, so the runtime refuses it with the same message.
"""

from __future__ import annotations

import functools
import signal
from typing import Any

from ..context import RateLimited, Retry
from ..job_context import Fail


class ChildError(Exception):
    """An exception a handler raised in its child process (its type is a
    subclass named as the original; its traceback is in the worker's log)."""


class ChildDiedError(Exception):
    """The handler's child process died while it ran a job (a signal, such as
    an OOM kill or a segfault, or ``os._exit``): that job's attempt fails."""


@functools.cache
def _error_type(module: str, name: str) -> type[ChildError]:
    kind = type(name.rpartition(".")[2], (ChildError,), {})
    kind.__module__, kind.__qualname__ = module, name
    return kind


@functools.cache
def _unstorable_type(name: str) -> type:
    return type(name, (), {})


def value_of(header: dict[str, Any], body: bytes) -> Any:
    """The return value a `done` frame carries."""
    kind = header["kind"]
    if kind == "s":
        return body.decode("utf-8", "surrogateescape")
    if kind == "b":
        return body
    if kind == "x":  # refused by the runtime with the message it gives in process
        return _unstorable_type(str(header["type"]))()
    return None


def error_of(header: dict[str, Any]) -> Exception:
    """The exception a `raised` frame carries."""
    kind = header["as"]
    if kind == "retry":
        return Retry(delay=header["delay"])
    if kind == "rate_limited":
        return RateLimited(header["seconds"])
    if kind == "fail":
        return Fail(header["message"])
    return _error_type(str(header["module"]), str(header["type"]))(header["message"])


def death_of(returncode: int | None) -> ChildDiedError:
    """Why a child ended in the middle of a job."""
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return ChildDiedError(f"the handler's child process was killed by {name}")
    return ChildDiedError(f"the handler's child process exited with status {returncode}")
