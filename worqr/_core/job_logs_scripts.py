"""The builders of the job log's scripts (``worqr/lua/job_log*.lua``), as
`job_scripts` holds the rest of the job layer's."""

from __future__ import annotations

from collections.abc import Sequence

from .._keys import QueueKeys
from .calls import Call


def job_log(
    keys: QueueKeys,
    id: str,
    pid: str,
    entry: str,
    lines: Sequence[bytes],
    *,
    max_lines: int,
    max_bytes: int,
) -> Call:
    # Not resendable: a resend of lines that landed would append them twice.
    return Call(
        "job_log",
        (keys.processes, keys.job_logs, keys.job_log(id)),
        (pid, entry, max_lines, max_bytes, *lines),
        False,
    )


def job_log_read(keys: QueueKeys, id: str, *, limit: int) -> Call:
    return Call("job_log_read", (keys.jobs, keys.job_logs, keys.job_log(id)), (id, limit))
