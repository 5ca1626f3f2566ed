"""What a `run` frame says of a process, and how the child rebuilds it.

The worker sends what `current_process()` and `current_job()` read in a
handler (ids, attempt, failures, a flow parent's children), never its own
settings; the child rebuilds the same `Process` or `JobProcess`, with the
payload from the frame's body. A value that may be bytes travels as
``{"b64": ...}`` or ``{"s": ...}``.
"""

from __future__ import annotations

import base64
from typing import Any

from ..._flows import ChildOutcome
from ..._jobs import JobProcess
from ..._process import Process, decode_task


def value_out(value: str | bytes | None) -> dict[str, str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {"s": value}
    return {"b64": base64.b64encode(value).decode("ascii")}


def value_in(value: dict[str, str] | None) -> str | bytes | None:
    if value is None:
        return None
    if "s" in value:
        return value["s"]
    return base64.b64decode(value["b64"])


def process_header(process: Process) -> dict[str, Any]:
    """The fields of ``process`` a child needs, for a `run` frame."""
    header: dict[str, Any] = {
        "id": process.id,
        "queue": process.queue,
        "worker": process.worker_id,
        "decoded": isinstance(process.task, str),
    }
    if isinstance(process, JobProcess):
        header["job"] = {
            "id": process.job_id,
            "entry": process.entry,
            "attempt": process.attempt,
            "failures": process.failures,
            "recoveries": process.recoveries,
            "waited": process.waited,
            "timeout": process.timeout,
            "child_policy": process.child_policy,
            "children": [
                [c.index, c.id, c.queue, c.state, value_out(c.result), c.error]
                for c in process.children or ()
            ],
        }
    return header


def process_from(header: dict[str, Any], data: bytes) -> Process:
    """The `Process` (or `JobProcess`) a `run` frame describes."""
    task = decode_task(data, bool(header["decoded"]))
    base = (header["id"], header["queue"], task, data, header["worker"])
    job = header.get("job")
    if job is None:
        return Process(*base)
    children = tuple(
        ChildOutcome(index, id, queue, state, value_in(result), error)
        for index, id, queue, state, result, error in job["children"]
    )
    return JobProcess(
        *base,
        job_id=job["id"],
        entry=job["entry"],
        attempt=job["attempt"],
        failures=job["failures"],
        recoveries=job["recoveries"],
        waited=job["waited"],
        retries=None,
        backoff=None,
        timeout=job["timeout"],
        children=children,
        child_policy=job["child_policy"],
    )
