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


def process_header(process: Process) -> list[Any]:
    """The fields of ``process`` a child needs, for a `run` frame: a list, not
    an object, as JSON is a fair share of an isolated job's cost. A job's are
    ``[id, queue, worker, decoded, [job_id, entry, attempt, failures,
    recoveries, waited, timeout, child_policy, children]]``; a task's end in
    None instead of the job's list."""
    base = [process.id, process.queue, process.worker_id, isinstance(process.task, str)]
    if not isinstance(process, JobProcess):
        return [*base, None]
    children = [
        [c.index, c.id, c.queue, c.state, value_out(c.result), c.error]
        for c in process.children or ()
    ]
    job = [
        process.job_id,
        process.entry,
        process.attempt,
        process.failures,
        process.recoveries,
        process.waited,
        process.timeout,
        process.child_policy,
        children,
    ]
    return [*base, job]


def process_from(header: list[Any], data: bytes) -> Process:
    """The `Process` (or `JobProcess`) a `run` frame describes."""
    pid, queue, worker, decoded, job = header
    task = decode_task(data, bool(decoded))
    if job is None:
        return Process(pid, queue, task, data, worker)
    job_id, entry, attempt, failures, recoveries, waited, timeout, policy, children = job
    return JobProcess(
        pid,
        queue,
        task,
        data,
        worker,
        job_id=job_id,
        entry=entry,
        attempt=attempt,
        failures=failures,
        recoveries=recoveries,
        waited=waited,
        retries=None,
        backoff=None,
        timeout=timeout,
        children=tuple(
            ChildOutcome(index, id, queue, state, value_in(result), error)
            for index, id, queue, state, result, error in children
        ),
        child_policy=policy,
    )
