"""The arguments of `worqr limit`: a job queue's rate limit and cap on active jobs."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._core.limits import rate_fields
from .base import EXIT_FAILURE, EXIT_USAGE, add_connection_options, positive_int
from .group_parser import group_name

if TYPE_CHECKING:
    from .parser import Subcommands


def rate_spec(text: str) -> tuple[int, float]:
    """``N/SECONDS`` (or ``N/s``, ``N/m``, ``N/h``) as ``(n, seconds)``."""
    starts, _, window = text.partition("/")
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    try:
        n = int(starts)
        seconds = units[window] if window in units else float(window)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a rate is N/SECONDS (e.g. 20/1, 100/m), not {text!r}"
        ) from None
    try:
        rate_fields((n, seconds))  # the library's own check, bounds included
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None
    return n, seconds


def add_set_or_remove(
    parser: argparse.ArgumentParser,
    name: str,
    kind: Callable[[str], object],
    metavar: str,
    help: str,
    removes: str,
) -> None:
    """``--NAME VALUE`` or ``--no-NAME`` (which removes ``removes``), never both."""
    either = parser.add_mutually_exclusive_group()
    either.add_argument(f"--{name}", type=kind, metavar=metavar, help=help)
    either.add_argument(f"--no-{name}", action="store_true", help=f"remove {removes}")


def add_limit_command(commands: Subcommands) -> None:
    parser = commands.add_on_queue(
        "limit",
        "Show or change a job queue's limits, enforced across every worker: at most N "
        "starts in any SECONDS (spread evenly), at most N active jobs. With no option, "
        "shows them and whether they hold the queue back now.",
    )
    add_set_or_remove(
        parser, "rate", rate_spec, "N/SECONDS", "e.g. 20/1 or 100/m", "the rate limit"
    )
    add_set_or_remove(parser, "max-active", positive_int, "N", "cap on active jobs", "the cap")
    parser.add_argument(
        "--group",
        type=group_name,
        metavar="G",
        help="show or change one fair-share group's own limits instead (over the "
        "queue's --group-rate and --group-max-active)",
    )
    add_set_or_remove(
        parser,
        "group-rate",
        rate_spec,
        "N/SECONDS",
        "the rate of every group of the queue (a group's own comes first)",
        "the groups' rate limit",
    )
    add_set_or_remove(
        parser,
        "group-max-active",
        positive_int,
        "N",
        "the cap on active jobs of every group of the queue",
        "the groups' cap",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_connection_options(parser)
    parser.epilog = (
        f"Exit codes: 0 ok (prints the limits); {EXIT_FAILURE} a queue that holds tasks, "
        f"or a failure; {EXIT_USAGE} bad usage or input (nothing is written)."
    )
