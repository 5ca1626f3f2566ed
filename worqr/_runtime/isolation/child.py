"""A handler child: ``python -m worqr._runtime.isolation.child``, started by its worker.

It reads a `boot` frame (the worker's sys.path and the handlers to import),
imports them, says `ready`, then runs one `run` frame at a time and answers
each with `done` or `raised`. Its standard input and the copy of its standard
output it keeps are the frame pipes; what the handler prints goes to standard
error, which the worker logs line by line.

SIGTERM sets the job's ``cancelled`` and unwinds the handler (SystemExit): the
child then exits and the worker starts another. SIGINT is ignored: a Ctrl-C
in a terminal reaches the whole process group, and the worker decides what
its handlers do during a graceful stop. A child whose worker died exits too
(its parent changes; checked twice a second).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import signal
import sys
import threading
import time
import traceback
from typing import Any, BinaryIO

from ..._jobs import JobProcess
from ..context import CancelEvent, ProcessContext, RateLimited, Retry, set_current
from ..job_context import Fail, JobContext, set_current_job
from . import frames
from .targets import Target, resolve
from .wire import process_from

PARENT_CHECK_SECONDS = 0.5
EXIT_ON_TERM = 143  # 128 + SIGTERM, as a shell reports it


class Child:
    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.write_lock = threading.Lock()  # progress may come from the handler's threads
        self.functions: dict[str, Any] = {}
        self.cancelled: CancelEvent | None = None
        self.memory = Memory(watched=False)

    def send(self, header: dict[str, Any], body: bytes = b"") -> None:
        self.send_packed(frames.pack(header, body))

    def send_packed(self, frame: bytes) -> None:
        with self.write_lock:
            self.out.write(frame)
            self.out.flush()

    def boot(self, header: dict[str, Any]) -> None:
        sys.path[:] = header["path"]
        self.memory = Memory(watched=bool(header.get("memory")))
        loaded: dict[str, dict[str, Any]] = {}
        targets: dict[str, Target] = header["targets"]
        for key, target in targets.items():
            self.functions[key] = resolve(target, loaded)

    def run(self, header: dict[str, Any], data: bytes) -> None:
        process = process_from(header["process"], data)
        cancelled = self.cancelled = CancelEvent()
        set_current(ProcessContext(process, cancelled))
        if isinstance(process, JobProcess):
            set_current_job(JobContext(process, cancelled, self._progress, self._log))
        try:
            result = self.functions[header["handler"]](process.task)
            if type(result) not in _RETURNS and inspect.isawaitable(result):
                getattr(result, "close", lambda: None)()
                raise TypeError(
                    f"the handler of queue {process.queue!r} returned an awaitable; "
                    "an isolated handler must be a plain function"
                )
        except Exception as error:
            self.send(self.memory.noted({"t": "raised", **raised(error)}))
            return
        finally:
            self.cancelled = None
        if result is None and not self.memory.watched:  # the common end, packed once
            self.send_packed(DONE_WITH_NONE)
        else:
            self.send(self.memory.noted({"t": "done", **returned(result)}), _body(result))

    def _progress(self, value: bytes) -> None:
        self.send({"t": "progress"}, value)

    def _log(self, line: bytes) -> None:
        self.send({"t": "job_log"}, line)  # a line of the job's log (current_job().log)

    def on_term(self, signum: int, frame: object) -> None:
        if self.cancelled is not None:
            self.cancelled.set()
        raise SystemExit(EXIT_ON_TERM)


DONE_WITH_NONE = frames.pack({"t": "done", "kind": "n"})  # what most jobs answer

_RETURNS = frozenset({type(None), str, bytes})  # what handlers return: no awaitable


def returned(result: object) -> dict[str, Any]:
    """A `done` frame's fields: the result's kind (s, b, n), or the type of a
    value no job can return (the worker fails it as it would in process)."""
    if result is None:
        return {"kind": "n"}
    if isinstance(result, str):
        return {"kind": "s"}
    if isinstance(result, bytes | bytearray | memoryview):
        return {"kind": "b"}
    return {"kind": "x", "type": type(result).__name__}


def _body(result: object) -> bytes:
    if isinstance(result, str):
        return result.encode("utf-8", "surrogateescape")
    if isinstance(result, bytes | bytearray | memoryview):
        return bytes(result)
    return b""


def raised(error: Exception) -> dict[str, Any]:
    """A `raised` frame's fields: worqr's own exceptions by what they ask
    (retry after a delay, rate limited, fail now), any other by its type's
    module and name and its message. Its traceback goes to the log."""
    if isinstance(error, Retry):
        return {"as": "retry", "delay": error.delay}
    if isinstance(error, RateLimited):
        return {"as": "rate_limited", "seconds": error.seconds}
    if isinstance(error, Fail):
        return {"as": "fail", "message": str(error)}
    traceback.print_exception(error, file=sys.stderr)
    kind = type(error)
    return {
        "as": "error",
        "module": kind.__module__,
        "type": kind.__qualname__,
        "message": str(error),
    }


class Memory:
    """This process's resident memory in bytes, read after each job only when the
    worker limits it (``watched``): Linux's /proc, opened once; 0 elsewhere."""

    def __init__(self, *, watched: bool) -> None:
        self.watched = watched
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._statm: int | None = None
        if watched:
            with contextlib.suppress(OSError):
                self._statm = os.open("/proc/self/statm", os.O_RDONLY)

    def noted(self, header: dict[str, Any]) -> dict[str, Any]:
        """``header`` with this process's resident memory (``rss``) when watched."""
        if self.watched:
            header["rss"] = self.resident()
        return header

    def resident(self) -> int:
        if self._statm is None:
            return 0
        try:
            return int(os.pread(self._statm, 100, 0).split()[1]) * self._page
        except (OSError, ValueError, IndexError):
            return 0


def watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)  # the worker died: its jobs are its peers' now


def main() -> None:
    frames_in = sys.stdin.buffer
    frames_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the handler's prints (and C code's writes to fd 1) go to the log
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    child = Child(frames_out)
    signal.signal(signal.SIGTERM, child.on_term)
    parent = os.getppid()
    threading.Thread(target=watch_parent, args=(parent,), daemon=True).start()
    boot = frames.read(frames_in)
    if boot is None:
        return
    child.boot(boot[0])
    child.send({"t": "ready", "rss": child.memory.resident()})
    try:
        while (frame := frames.read(frames_in)) is not None:
            child.run(*frame)
    except SystemExit as stop:  # SIGTERM: the handler unwound; the worker waits for this exit
        sys.stderr.flush()
        os._exit(stop.code if isinstance(stop.code, int) else EXIT_ON_TERM)


if __name__ == "__main__":
    main()
