"""What the API answers about jobs and values, as the models of `models`.

A value (payload, result, progress) that is ``str`` goes under its name, one
that is ``bytes`` under ``<name>_b64`` as base64 (as `worqr job --json`).
Payloads and results are left out of job records unless the server runs with
``--show-payloads``: a status or a list shows state, never data. The result
endpoint always returns the result (that is what a submitter asks it for);
progress, a short status line the handler reports for watchers, is shown.
"""

from __future__ import annotations

import base64
from typing import Any

from .._jobs import JobInfo
from .replies import JobReply


def value_fields(name: str, value: str | bytes | None) -> dict[str, Any]:
    if isinstance(value, bytes):
        return {f"{name}_b64": base64.b64encode(value).decode("ascii")}
    return {name: value}


def job_reply(job: JobInfo, *, show_payloads: bool) -> JobReply:
    """The job's record; times are Redis server epoch seconds (None when unset)."""
    values = value_fields("progress", job.progress)
    if show_payloads:
        values.update(value_fields("payload", job.payload))
        values.update(value_fields("result", job.result))
    return JobReply(
        id=job.id,
        queue=job.queue,
        state=job.state,
        attempts=job.attempts,
        error=job.error,
        created=job.created,
        started=job.started,
        ended=job.ended,
        due=job.due,
        **values,
    )


def job_json(job: JobInfo, *, show_payloads: bool) -> dict[str, Any]:
    """`job_reply` as JSON-ready data (the event stream's)."""
    return job_reply(job, show_payloads=show_payloads).model_dump(mode="json", exclude_unset=True)
