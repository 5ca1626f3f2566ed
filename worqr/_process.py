"""What `dequeue` hands out."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Process:
    """One task being worked on.

    Attributes:
        id: unique process id; pass it (or the Process) to `finish_process` or
            `stop_process`.
        queue: the queue the task came from.
        task: the payload: ``str`` if it is valid UTF-8 and the client decodes
            tasks (the default), else ``bytes``.
        data: the payload exactly as stored, always ``bytes``.
        worker_id: the worker that holds the process.
    """

    id: str
    queue: str
    task: str | bytes = field(repr=False)
    data: bytes = field(repr=False)
    worker_id: str


def decode_task(data: bytes, decode: bool) -> str | bytes:
    if not decode:
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data
