"""The arguments of the schedule commands: `worqr schedule`, `worqr unschedule`
and `worqr schedules`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import EXIT_FAILURE, EXIT_USAGE, add_connection_options, positive_float

if TYPE_CHECKING:
    from .parser import Subcommands


def add_schedule_commands(commands: Subcommands) -> None:
    parser = commands.add_on_queue(
        "schedule",
        "Create or replace a schedule of a job queue: a job with PAYLOAD at each fire "
        "time of a cron expression, or every SECONDS. Declaring an equal schedule again "
        "changes nothing.",
    )
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("payload", nargs="?", metavar="PAYLOAD", help="(default: empty)")
    parser.set_defaults(late_positional="payload")
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", metavar="EXPR", help='a 5-field cron expression, e.g. "0 3 * * *"')
    when.add_argument("--every", type=positive_float, metavar="SECONDS", help="a fixed interval")
    parser.add_argument(
        "--tz",
        default="UTC",
        metavar="TZ",
        help="the IANA time zone the cron expression is read in (default: UTC)",
    )
    parser.add_argument(
        "--no-overlap",
        action="store_true",
        help="skip a fire while the previous fire's job is still live",
    )
    add_connection_options(parser)
    parser.epilog = (
        f"Exit codes: 0 scheduled (prints its next run); {EXIT_FAILURE} failure at run "
        f"time; {EXIT_USAGE} bad usage or input (a bad cron expression, an unknown time "
        "zone: nothing is written)."
    )

    parser = commands.add_on_queue("unschedule", "Remove a schedule (the jobs it created stay).")
    parser.add_argument("name", metavar="NAME")
    add_connection_options(parser)
    parser.epilog = f"Exit codes: 0 removed; {EXIT_FAILURE} no such schedule, or a failure."

    parser = commands.add_on_queue(
        "schedules",
        "List the schedules of a queue (default: of every job queue).",
        optional=True,
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_connection_options(parser)
