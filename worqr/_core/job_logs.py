"""Job logs: the lines a handler writes with ``current_job().log(line)``, kept
next to the job's record and gone with it (``lua/lib/job_log.lua``).

A log keeps the newest `MAX_LOG_LINES` lines and at most `MAX_LOG_BYTES` bytes
of them (UTF-8), the oldest dropped first. A line longer than `MAX_LINE_BYTES`
is cut to its first bytes (at a character boundary) and ends with a marker
saying how many bytes were cut, the whole within `MAX_LINE_BYTES`. Lines from a
worker that lost the job are dropped by the script, as a late finish is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._checks import count
from .._jobs import JobProcess, validate_job_id
from . import job_logs_scripts
from .calls import Plan
from .kinds import QueueKinds
from .state import CoreState

MAX_LOG_LINES = 1000
MAX_LOG_BYTES = 64 * 1024
MAX_LINE_BYTES = 16 * 1024  # a log keeps at least four lines of the longest kind
CUT_MARKER = " [... {} bytes cut]"


def log_line(line: object) -> bytes:
    """``line`` as a log keeps it: UTF-8 (a lone surrogate escaped as ``\\udcxx``),
    cut to `MAX_LINE_BYTES` with a marker; `TypeError` for anything but a `str`."""
    if not isinstance(line, str):
        raise TypeError(f"a log line must be str, not {type(line).__name__}")
    data = line.encode("utf-8", "backslashreplace")
    if len(data) <= MAX_LINE_BYTES:
        return data
    room = len(CUT_MARKER.format(len(data)))  # the count cut has no more digits
    kept = data[: MAX_LINE_BYTES - room].decode("utf-8", "ignore").encode("utf-8")
    return kept + CUT_MARKER.format(len(data) - len(kept)).encode("ascii")


def newest_lines(lines: Sequence[bytes]) -> list[bytes]:
    """The lines a log would keep of ``lines`` (the newest within both caps):
    what is sent, since the script would drop the rest on arrival."""
    kept, size = 0, 0
    for line in reversed(lines):
        if kept == MAX_LOG_LINES or size + len(line) > MAX_LOG_BYTES:
            break
        kept, size = kept + 1, size + len(line)
    return list(lines[len(lines) - kept :])


@dataclass(eq=False)
class JobLogs:
    """Appending to and reading job logs (``core.job_logs``)."""

    state: CoreState
    kinds: QueueKinds

    def append(self, process: JobProcess, lines: Sequence[bytes]) -> Plan[bool]:
        """Append ``lines`` (`log_line` made each) to the job's log; False when
        fenced (the process is no longer the job's: nothing written)."""
        sent = newest_lines(lines)
        if not sent:
            return True
        reply = yield job_logs_scripts.job_log(
            self.state.queue_keys(process.queue),
            process.job_id,
            process.id,
            process.entry,
            sent,
            max_lines=MAX_LOG_LINES,
            max_bytes=MAX_LOG_BYTES,
        )
        return bool(reply == 1)

    def get_job_log(self, queue: str, id: str, limit: int = 100) -> Plan[list[str] | None]:
        """The newest ``limit`` lines of the job's log, oldest first; None when
        there is no such job (or it was purged), as `get_job`."""
        keys = self.state.queue_keys(queue)
        validate_job_id(id)
        count("limit", limit, low=1, high=MAX_LOG_LINES)
        reply = yield job_logs_scripts.job_log_read(keys, id, limit=limit)
        if reply is None:
            yield from self.kinds.refuse_task_queue(queue)
            return None
        return [_decoded(line) for line in reply]


def _decoded(line: bytes | str) -> str:
    return line.decode("utf-8", "replace") if isinstance(line, bytes) else line
