"""`worqr history`: a job queue's metrics history (`Worqr.get_history`)."""

from __future__ import annotations

import argparse
import json
import time

from .._core.history_model import COUNTS, HistoryPoint, totals
from .base import EXIT_OK, admin_client


def history(args: argparse.Namespace) -> int:
    since = float(args.since)
    with admin_client(args) as client:
        points = client.get_history(args.queue, since=since)
    summary = totals(points)
    if args.json:
        document = {
            "queue": args.queue,
            "since": since,
            "totals": summary,
            "points": [each.as_dict() for each in points],
        }
        print(json.dumps(document, indent=2))
    else:
        print(render(points, summary))
    return EXIT_OK


def _seconds(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.3g}ms" if value < 1 else f"{value:.3g}s"


def render(points: list[HistoryPoint], summary: dict[str, int | float | None]) -> str:
    """A table: one line per point (UTC time), then the totals."""
    header = ["time (UTC)", *COUNTS, "p50", "p95", "p99"]
    rows = [
        [
            time.strftime("%Y-%m-%d %H:%M", time.gmtime(each.time)),
            *(str(n) for n in each.counts()),
            *(_seconds(v) for v in (each.p50, each.p95, each.p99)),
        ]
        for each in points
    ]
    rows.append(
        [
            "total",
            *(str(summary[name]) for name in COUNTS),
            *(_seconds(summary[name]) for name in ("p50", "p95", "p99")),
        ]
    )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    if not points:
        lines.insert(1, "(no job runs in this time)")
    return "\n".join(lines)
