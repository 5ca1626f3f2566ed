"""Server-Sent Events of one job: its state changes, its progress, its end.

The stream waits on the job's end notification (`result` with a timeout: the
library's pub/sub wait, no polling), so ``end`` comes at once; between waits
it reads the job every `EVENTS_INTERVAL` seconds for state and progress, which
the library keeps in Redis without announcing each change to everyone.

Events (``data`` is JSON):

- ``state``: the job record (as ``GET .../jobs/{id}``) when its state or
  attempts changed; the first event of every stream.
- ``progress``: ``{"id", "progress"}`` (or ``progress_b64``) when it changed.
- ``end``: the final record once the job finished, failed or was cancelled;
  the stream then closes. ``{"id", "state": null}`` if the job was purged.

A comment line keeps idle connections open through proxies.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .._clients.async_client import AsyncWorqr
from .._errors import JobCancelledError, JobFailedError, JobNotFoundError
from .._jobs import TERMINAL, JobInfo
from .config import config_of
from .views import existing_job, job_json, value_fields

KEEPALIVE_SECONDS = 15.0


def event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


async def job_events(request: Request, queue: str, id: str) -> Response:
    config = config_of(request)
    first = await existing_job(config.client, queue, id)  # 404 (or 409) before the stream starts
    stream = _stream(
        config.client, first, show_payloads=config.show_payloads, interval=config.events_interval
    )
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)


async def _stream(
    client: AsyncWorqr, job: JobInfo | None, *, show_payloads: bool, interval: float
) -> AsyncIterator[bytes]:
    assert job is not None
    queue, id = job.queue, job.id
    last_state: tuple[str, int] | None = None
    last_progress: str | bytes | None = None
    quiet_since = time.monotonic()
    while True:
        if job is None:
            yield event("end", {"id": id, "state": None})
            return
        if (job.state, job.attempts) != last_state:
            last_state = (job.state, job.attempts)
            quiet_since = time.monotonic()
            if job.state in TERMINAL:
                yield event("end", job_json(job, show_payloads=show_payloads))
                return
            yield event("state", job_json(job, show_payloads=show_payloads))
        if job.progress is not None and job.progress != last_progress:
            last_progress = job.progress
            quiet_since = time.monotonic()
            yield event("progress", {"id": id, **value_fields("progress", job.progress)})
        if time.monotonic() - quiet_since >= KEEPALIVE_SECONDS:
            quiet_since = time.monotonic()
            yield b": keep-alive\n\n"
        # Returns as soon as the job ends, else after `interval`: its end is never late.
        with contextlib.suppress(TimeoutError, JobFailedError, JobCancelledError, JobNotFoundError):
            await client.result(queue, id, timeout=interval)
        job = await client.get_job(queue, id)
