"""`worqr top`: the `status` snapshot, live, with rates; needs `rich` (the `cli` extra)."""

from __future__ import annotations

import argparse
import itertools
import time
from typing import TYPE_CHECKING

from .base import EXIT_FAILURE, EXIT_OK, CliError, admin_client
from .status import JOB_COLUMNS, QueueRow, Snapshot, take_snapshot

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

RATE_EVENTS = ("enqueued", "submitted", "finished", "failed", "cancelled", "recovered")


class Rates:
    """Per-second rates of each queue's lifetime counters between two snapshots."""

    def __init__(self) -> None:
        self._last: tuple[float, dict[str, dict[str, int]]] | None = None

    def update(self, snapshot: Snapshot, now: float) -> dict[str, dict[str, float]]:
        counters = {q.name: q.stats for q in snapshot.queues}
        rates: dict[str, dict[str, float]] = {}
        if self._last is not None:
            then, before = self._last
            elapsed = max(now - then, 1e-6)
            for name, stats in counters.items():
                old = before.get(name, {})
                rates[name] = {
                    event: max(0, stats.get(event, 0) - old.get(event, 0)) / elapsed
                    for event in RATE_EVENTS
                }
        self._last = (now, counters)
        return rates


def view(snapshot: Snapshot, rates: dict[str, dict[str, float]]) -> RenderableType:
    from rich.console import Group
    from rich.table import Table

    queues = Table(title=f"worqr mesh {snapshot.prefix!r}: queues", title_justify="left")
    for header in ("queue", "queued", "in process", "failed", "enqueued/s", "finished/s"):
        queues.add_column(header, justify="left" if header == "queue" else "right")
    for q in snapshot.queues:
        if q.jobs is not None:
            continue
        rate = rates.get(q.name)
        queues.add_row(
            q.name,
            str(q.queued),
            str(q.in_process),
            str(q.failed),
            f"{rate['enqueued']:.1f}" if rate else "-",
            f"{rate['finished']:.1f}" if rate else "-",
        )
    workers = Table(title="workers", title_justify="left")
    for header in ("worker", "alive", "host", "pid", "in process", "queues"):
        workers.add_column(header, justify="right" if header in ("pid", "in process") else "left")
    for w in snapshot.workers:
        workers.add_row(
            w.id,
            "yes" if w.alive else "[red]NO[/red]",
            w.host,
            str(w.pid or "?"),
            str(w.in_process),
            ", ".join(w.queues) or "-",
        )
    tables = []
    if queues.row_count or all(q.jobs is None for q in snapshot.queues):
        tables.append(queues)
    if any(q.jobs is not None for q in snapshot.queues):
        tables.append(job_view(snapshot, rates))
    return Group(*tables, workers)


def job_view(snapshot: Snapshot, rates: dict[str, dict[str, float]]) -> Table:
    from rich.table import Table

    jobs = Table(title=f"worqr mesh {snapshot.prefix!r}: job queues", title_justify="left")
    for header in ("queue", *JOB_COLUMNS, "submitted/s", "finished/s", "limits"):
        jobs.add_column(header, justify="left" if header == "queue" else "right")
    for q in snapshot.queues:
        if q.jobs is None:
            continue
        rate = rates.get(q.name)
        counts = [str(q.jobs.get(column, 0)) for column in JOB_COLUMNS]
        if q.jobs.get("overdue"):  # due, not promoted: no member took them in time
            counts[JOB_COLUMNS.index("overdue")] = f"[yellow]{q.jobs['overdue']}[/yellow]"
        jobs.add_row(
            q.name,
            *counts,
            f"{rate['submitted']:.1f}" if rate else "-",
            f"{rate['finished']:.1f}" if rate else "-",
            _limits(q),
        )
    return jobs


def _limits(q: QueueRow) -> str:
    """The limits cell: yellow while they (or a pause) hold the queue back."""
    if not q.limits:
        return "-"
    return f"[yellow]{q.limits}[/yellow]" if q.limited or q.paused else q.limits


def top(args: argparse.Namespace) -> int:
    try:
        from rich.live import Live
    except ImportError:
        raise CliError(
            "worqr top needs the 'rich' package: pip install 'worqr[cli]'", EXIT_FAILURE
        ) from None
    rates = Rates()
    live = Live(auto_refresh=False)
    try:
        with admin_client(args) as client, live:
            for turn in itertools.count(1):
                snapshot = take_snapshot(client)
                live.update(view(snapshot, rates.update(snapshot, time.monotonic())))
                live.refresh()
                if args.iterations is not None and turn >= args.iterations:
                    break
                time.sleep(args.interval)
    except KeyboardInterrupt:  # Ctrl-C is how one leaves `top`
        pass
    if not live.console.is_terminal:
        live.console.print()  # rich leaves the last frame without a final newline
    return EXIT_OK
