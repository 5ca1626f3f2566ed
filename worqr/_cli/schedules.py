"""`worqr schedule`, `unschedule` and `schedules`. Bad input (a bad cron
expression, an unknown time zone) exits 2 with one line, before anything is
written."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from datetime import UTC, datetime

from .._schedules import ScheduleInfo
from .base import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError, admin_client, argv_value


def schedule(args: argparse.Namespace) -> int:
    with admin_client(args) as client:
        try:
            info = client.schedule(
                args.queue,
                args.name,
                cron=args.cron,
                every=args.every,
                tz=args.tz,
                payload="" if args.payload is None else argv_value(args.payload),
                overlap=not args.no_overlap,
            )
        except ImportError as error:  # cronsim missing: the install, not the input
            raise CliError(str(error), EXIT_FAILURE) from None
        except (ValueError, TypeError) as error:  # raised before anything is written
            raise CliError(str(error), EXIT_USAGE) from None
        now = client.server_time()
    print(f"schedule {info.name!r} of queue {info.queue!r}: next run {_when(info, now)}")
    return EXIT_OK


def unschedule(args: argparse.Namespace) -> int:
    with admin_client(args) as client:
        if not client.unschedule(args.queue, args.name):
            raise CliError(f"queue {args.queue!r} has no schedule {args.name!r}")
    return EXIT_OK


def schedules(args: argparse.Namespace) -> int:
    with admin_client(args) as client:
        queues = [args.queue] if args.queue else sorted(client.get_queues())
        found = [info for queue in queues for info in client.get_schedules(queue)]
        now = client.server_time()
    if args.json:
        print(json.dumps([asdict(info) for info in found], indent=2))
        return EXIT_OK
    if not found:
        print("no schedules")
        return EXIT_OK
    rows = [("QUEUE", "NAME", "WHEN", "TZ", "NEXT RUN")]
    for info in found:
        spec = info.cron if info.cron is not None else f"every {info.every:g} s"
        rows.append((info.queue, info.name, spec, info.tz, _when(info, now)))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), end=""
        )
        print(f"  {row[4]}")
    return EXIT_OK


def _when(info: ScheduleInfo, now: float) -> str:
    if info.paused:
        return "paused"
    if info.next_run is None:
        return "unknown (waiting for fire times: is a worker of the queue running?)"
    at = datetime.fromtimestamp(info.next_run, UTC).isoformat(timespec="seconds")
    return f"{at} (in {max(0.0, info.next_run - now):.0f} s)"
