"""The arguments of `worqr pause` and `worqr resume`: a job queue's durable
pause, or one of its schedules'."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._schedules import validate_schedule_name
from .base import EXIT_FAILURE, EXIT_USAGE, add_connection_options, checked_by, queue_name
from .group_parser import group_name

if TYPE_CHECKING:
    from .parser import Subcommands


schedule_name = checked_by(validate_schedule_name)
"""argparse ``type=`` for schedule names: a bad name is a usage error."""


def add_pause_commands(commands: Subcommands) -> None:
    for name, text in (
        (
            "pause",
            "Pause a job queue on every worker and host until `worqr resume`: no job "
            "starts once this returns (active ones finish; delayed ones come due and "
            "wait), and restarting the workers keeps it paused. With --schedule, pause "
            "one of its schedules: it fires nothing until resumed; with --group, one "
            "fair-share group (it may have no jobs yet).",
        ),
        (
            "resume",
            "Resume a paused job queue (idle workers are woken for its ready jobs), or "
            "with --schedule one of its schedules (the fires it missed give one job), or "
            "with --group one of its groups.",
        ),
    ):
        parser = commands.add(name, text)
        parser.add_argument("queue", type=queue_name, metavar="QUEUE")
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--schedule", type=schedule_name, metavar="NAME", help="a schedule of the queue"
        )
        which.add_argument(
            "--group",
            type=group_name,
            metavar="G",
            help="one fair-share group of the queue (the others run on)",
        )
        add_connection_options(parser)
        parser.epilog = (
            f"Exit codes: 0 ok; {EXIT_FAILURE} no such schedule, a queue that holds tasks, "
            f"or a failure; {EXIT_USAGE} bad usage or input (nothing is written)."
        )
