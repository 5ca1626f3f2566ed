"""How the job commands show jobs: times in ISO 8601 UTC, bounded previews of
payloads and results, a `JobInfo` as JSON (bytes as base64), one line per job."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime

from .._jobs import JobInfo
from .status import table

PREVIEW_CHARS = 200
"""Longest preview of a payload, result or progress value (a payload may be 256 MB)."""

ERROR_CHARS = 60
"""Longest error summary in a list of jobs (`worqr job` shows it whole: at most 1 KB)."""

VALUES = ("payload", "result", "progress")


def iso(seconds: float | None) -> str:
    """Epoch seconds as ISO 8601 UTC with milliseconds, "-" for None."""
    if seconds is None:
        return "-"
    when = datetime.fromtimestamp(seconds, UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _size(value: str | bytes) -> int:
    return len(value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value)


def preview(value: str | bytes | None, limit: int = PREVIEW_CHARS) -> str:
    """A value on one line: printable text as is, anything else (binary, line
    breaks, empty) as a Python literal; cut at ``limit`` characters, then its size."""
    if value is None:
        return "-"
    head = value[: limit + 1]
    shown = head if isinstance(head, str) and head and head.isprintable() else repr(head)
    if len(shown) <= limit and len(value) <= limit:
        return shown
    return f"{shown[:limit]}... ({_size(value):,} bytes)"


def summary(error: str | None, limit: int = ERROR_CHARS) -> str:
    if not error:
        return "-"
    return error if len(error) <= limit else error[: limit - 3] + "..."


def job_json(job: JobInfo, *, values: bool = True) -> dict[str, object]:
    """Every field of ``job`` (times as epoch seconds). A bytes payload, result or
    progress goes under ``<name>_b64`` (base64) instead of ``<name>``; without
    ``values`` those three are left out."""
    out: dict[str, object] = {}
    for field in dataclasses.fields(job):
        value = getattr(job, field.name)
        if field.name in VALUES:
            if not values:
                continue
            if isinstance(value, bytes):
                out[f"{field.name}_b64"] = base64.b64encode(value).decode("ascii")
                continue
        out[field.name] = value
    return out


def job_text(job: JobInfo) -> str:
    """The whole record, one field per line; values as bounded previews."""
    rows = [
        ("id", job.id),
        ("queue", job.queue),
        ("state", job.state),
        ("attempts", str(job.attempts)),
        ("created", iso(job.created)),
        ("started", iso(job.started)),
        ("ended", iso(job.ended)),
        ("due", iso(job.due)),
        ("error", job.error or "-"),
        ("progress", preview(job.progress)),
        ("payload", preview(job.payload)),
        ("result", preview(job.result)),
    ]
    return "\n".join(f"{name:<9} {value}" for name, value in rows)


def when(job: JobInfo) -> str:
    """The time that matters in the job's state."""
    if job.state in ("delayed", "retrying"):
        return f"due {iso(job.due)}"
    if job.state == "active":
        return f"started {iso(job.started)}"
    if job.state == "queued":
        return f"created {iso(job.created)}"
    return f"ended {iso(job.ended)}"


def jobs_table(jobs: Sequence[JobInfo]) -> str:
    rows = [(j.id, j.state, j.attempts, when(j), summary(j.error)) for j in jobs]
    return table(("ID", "STATE", "ATTEMPTS", "WHEN", "ERROR"), rows, {2})


def failed_table(jobs: Sequence[JobInfo]) -> str:
    rows = [(j.id, j.attempts, j.error or "-") for j in jobs]
    return table(("ID", "ATTEMPTS", "ERROR"), rows, {1})
