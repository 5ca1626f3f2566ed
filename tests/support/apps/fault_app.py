"""The worker module of the fault suite: `worqr worker fault_app:worker`.

Every execution appends JSON lines to the file named by ``$FAULT_LOG`` (one
``write`` with O_APPEND per line, so lines from many processes never mix):

- ``{"e": "start", "t": task, "p": process id, "w": worker id, "os": pid, "m": monotonic}``
  when a handler starts, and ``"e": "done"`` or ``"e": "cancelled"`` when it ends;
- ``"e": "registered"`` / ``"lease_lost"`` (observer events, with the worker id);
- ``"e": "fenced"`` when the runtime reports a process that was no longer ours;
- ``"e": "dropped"`` when a dequeue ran late, under a worker id whose lease was
  already lost: the process is not started and peers requeue it;
- ``"e": "stale"`` when the runtime stopped its handlers because no heartbeat
  landed for most of the TTL (self-fencing).

Tasks of queue "jobs" are ``ID`` (finish at once), ``ID:MS`` (work MS
milliseconds) or ``ID:hold`` (run until cancelled), optionally followed by
``:PADDING``. A handler that sees its
``cancelled`` event stops early and records "cancelled". Settings that the
command line has no option for come from the environment: ``FAULT_POLL``
(poll_interval), ``FAULT_MAX_RECOVERIES``, ``FAULT_SOCKET_TIMEOUT``.

``FAULT_QUEUES`` (a JSON list) adds queues whose payloads are opaque bytes:
their handler records ``"t"`` = the SHA-256 of the exact payload, ``"n"`` its
length and ``"q"`` the queue, and never interprets the payload.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from typing import Any

import worqr

QUEUE = "jobs"
HOLD_LIMIT = 120.0  # seconds a hold task waits for its cancellation at most

_fd: int | None = None


def _settings() -> worqr.WorkerSettings:
    client: dict[str, Any] = {}
    if "FAULT_POLL" in os.environ:
        client["poll_interval"] = float(os.environ["FAULT_POLL"])
    if "FAULT_MAX_RECOVERIES" in os.environ:
        client["max_recoveries"] = int(os.environ["FAULT_MAX_RECOVERIES"])
    if "FAULT_SOCKET_TIMEOUT" in os.environ:
        client["socket_timeout"] = float(os.environ["FAULT_SOCKET_TIMEOUT"])
    return worqr.WorkerSettings(client=worqr.Settings(**client), grace_period=2.0)


def record(event: str, **fields: object) -> None:
    global _fd
    if _fd is None:
        _fd = os.open(os.environ["FAULT_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    entry = {"e": event, "os": os.getpid(), "m": time.monotonic(), **fields}
    os.write(_fd, (json.dumps(entry) + "\n").encode())


class _Hooks(worqr.Hooks):
    def on_fenced(self, queue: str) -> None:
        record("fenced", q=queue)

    def on_dropped(self, queue: str) -> None:
        record("dropped", q=queue)


def _observe(event: str, fields: dict[str, Any]) -> None:
    if event in ("registered", "lease_lost"):
        record(event, w=fields["worker"])


class _FenceLog(logging.Handler):
    """Records the runtime's self-fencing ("no heartbeat landed ..."), after which
    the stopped tasks may run again although the lease was never lost."""

    def emit(self, entry: logging.LogRecord) -> None:
        if entry.getMessage().startswith("no heartbeat landed"):
            record("stale")


logging.getLogger("worqr.worker").addHandler(_FenceLog(logging.WARNING))


worker = worqr.Worker(settings=_settings(), hooks=[_Hooks()])
worker.add_observer(_observe)


@worker.handler(QUEUE)
def job(task: str) -> None:
    process = worqr.current_process()
    ident, _, rest = task.partition(":")
    how = rest.partition(":")[0]  # anything after a second colon is padding
    where = {"t": ident, "p": process.id, "w": process.worker_id}
    record("start", **where)
    seconds = HOLD_LIMIT if how == "hold" else int(how or 0) / 1000
    if seconds and process.cancelled.wait(seconds):
        record("cancelled", **where)
        return
    if how == "hold":
        raise RuntimeError("a hold task was never cancelled")
    record("done", **where)


def opaque(task: str | bytes) -> None:
    process = worqr.current_process().process
    where = {"t": hashlib.sha256(process.data).hexdigest(), "p": process.id, "q": process.queue}
    record("start", w=process.worker_id, n=len(process.data), **where)
    record("done", w=process.worker_id, **where)


for _queue in json.loads(os.environ.get("FAULT_QUEUES", "[]")):
    worker.handler(_queue)(opaque)
