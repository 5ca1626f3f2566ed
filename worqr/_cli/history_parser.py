"""The arguments of `worqr history`: a job queue's metrics history."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.history import parse_since
from .base import EXIT_FAILURE, EXIT_USAGE, add_connection_options, checked_by

if TYPE_CHECKING:
    from .parser import Subcommands

since_text = checked_by(lambda value: str(parse_since(value)))
"""argparse ``type=`` for --since: a bad value is a usage error."""


def add_history_command(commands: Subcommands) -> None:
    parser = commands.add_on_queue(
        "history",
        "Show a job queue's metrics history, written by its workers: per minute (per "
        "ten minutes beyond 8 hours) the runs started, finished, retried, failed and "
        "cancelled, and run-time percentiles; then the totals.",
    )
    parser.add_argument(
        "--since",
        type=since_text,
        default="3600",
        metavar="AGE",
        help="how far back: seconds, or 30m, 8h, 3d (default: 1h; at most 72h)",
    )
    parser.add_argument(
        "--json", action="store_true", help='machine-readable: {"queue", "totals", "points"}'
    )
    add_connection_options(parser)
    parser.epilog = (
        f"Exit codes: 0 ok (an empty history too); {EXIT_FAILURE} failure at run time; "
        f"{EXIT_USAGE} bad usage or input."
    )
