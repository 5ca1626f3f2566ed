"""The arguments of `worqr groups`: a job queue's fair-share groups, and the
``--group`` type the other commands share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._jobs import validate_group
from .base import EXIT_FAILURE, EXIT_USAGE, add_connection_options, checked_by, positive_int

if TYPE_CHECKING:
    from .parser import Subcommands

GROUPS_LIMIT = 100
"""Groups `worqr groups` lists unless --limit says otherwise."""


group_name = checked_by(validate_group)
"""argparse ``type=`` for group names (the job-id rules): a bad one is a usage error."""


def add_groups_command(commands: Subcommands) -> None:
    parser = commands.add_on_queue(
        "groups",
        "List a job queue's fair-share groups (those with waiting or active jobs, limits "
        "of their own or a pause): their jobs in each state, the limits in force and "
        "whether they hold the group back now.",
    )
    parser.add_argument(
        "--limit",
        type=positive_int,
        metavar="N",
        help=f"at most N groups, read page by page (default: {GROUPS_LIMIT})",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_connection_options(parser)
    parser.epilog = (
        f"Exit codes: 0 listed; {EXIT_FAILURE} failure at run time; {EXIT_USAGE} bad usage."
    )
