"""`worqr status`: one snapshot of the mesh's queues and workers, as a table or JSON."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from .._clients.sync_client import Worqr
from .base import EXIT_OK, admin_client
from .limits import describe

JOB_COLUMNS = ("queued", "delayed", "active", "retrying", "overdue", "finished", "failed")


@dataclass
class QueueRow:
    """A queue; for a job queue, ``queued``, ``in_process`` and ``failed`` are its
    queued, active and failed jobs, and ``jobs`` has the count of every state and
    "overdue" (delayed or retrying jobs already due, not yet promoted)."""

    name: str
    queued: int
    in_process: int
    failed: int
    stats: dict[str, int] = field(default_factory=dict)
    kind: str = "tasks"
    jobs: dict[str, int] | None = None
    limits: str | None = None  # a job queue's rate and cap (`worqr limit`), if any
    limited: bool = False  # whether they keep a job from starting now
    paused: bool = False  # `worqr pause`: no job starts until `worqr resume`


@dataclass
class WorkerRow:
    id: str
    alive: bool
    host: str
    pid: int | None
    queues: list[str]
    in_process: int


@dataclass
class Snapshot:
    prefix: str
    queues: list[QueueRow]
    workers: list[WorkerRow]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def queue_row(client: Worqr, name: str, now: float) -> QueueRow:
    if client.internals.queue_kind(name) == "jobs":
        counts = client.internals.job_counts(name)
        limits = client.get_limits(name)
        has_limits = limits.rate is not None or limits.max_active is not None or limits.paused
        return QueueRow(
            name,
            counts["queued"],
            counts["active"],
            counts["failed"],
            client.get_stats(name),
            "jobs",
            counts,
            describe(limits, now) if has_limits else None,
            limits.limited,
            limits.paused,
        )
    return QueueRow(
        name,
        client.count_tasks(name),
        client.count_processes(name),
        client.count_failed(name),
        client.get_stats(name),
    )


def take_snapshot(client: Worqr) -> Snapshot:
    """Read the registries and counters. Not atomic across queues: each number
    is exact for the moment it was read."""
    now = client.server_time()
    queues = [queue_row(client, name, now) for name in client.get_queues()]
    worker_ids = client.get_workers()
    workers = []
    for worker, alive in zip(worker_ids, client.workers_alive(worker_ids), strict=True):
        info = client.get_worker_info(worker)
        worked = client.get_working_queues(worker)
        pid = info.get("pid", "")
        workers.append(
            WorkerRow(
                worker,
                alive,
                info.get("host", "?"),
                int(pid) if pid.isdigit() else None,
                worked,
                sum(client.count_worker_processes(queue, worker) for queue in worked),
            )
        )
    return Snapshot(client.settings.prefix, queues, workers)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], right: set[int]) -> str:
    """Plain aligned columns; ``right`` holds the indexes of numeric columns."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        parts = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def render(snapshot: Snapshot) -> str:
    queue_rows = [
        (q.name, q.queued, q.in_process, q.failed) for q in snapshot.queues if q.jobs is None
    ]
    job_rows = [
        (q.name, *(q.jobs.get(column, 0) for column in JOB_COLUMNS))
        for q in snapshot.queues
        if q.jobs is not None
    ]
    worker_rows = [
        (
            w.id,
            "yes" if w.alive else "NO",
            w.host,
            w.pid if w.pid is not None else "?",
            w.in_process,
            ", ".join(w.queues) or "-",
        )
        for w in snapshot.workers
    ]
    parts = [f"mesh {snapshot.prefix!r}", ""]
    if queue_rows:
        parts.append(table(("QUEUE", "QUEUED", "IN PROCESS", "FAILED"), queue_rows, {1, 2, 3}))
    if job_rows:
        if queue_rows:
            parts.append("")
        headers = ("JOB QUEUE", *(column.upper() for column in JOB_COLUMNS))
        parts.append(table(headers, job_rows, set(range(1, len(headers)))))
    limit_rows = [(q.name, q.limits) for q in snapshot.queues if q.limits is not None]
    if limit_rows:
        parts += ["", table(("JOB QUEUE", "LIMITS"), limit_rows, set())]
    if not queue_rows and not job_rows:
        parts.append("no queues")
    parts.append("")
    if worker_rows:
        headers = ("WORKER", "ALIVE", "HOST", "PID", "IN PROCESS", "QUEUES")
        parts.append(table(headers, worker_rows, {3, 4}))
    else:
        parts.append("no workers")
    return "\n".join(parts)


def status(args: argparse.Namespace) -> int:
    with admin_client(args) as client:
        snapshot = take_snapshot(client)
    print(snapshot.to_json() if args.json else render(snapshot))
    return EXIT_OK
