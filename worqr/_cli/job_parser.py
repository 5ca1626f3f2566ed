"""The arguments of the job commands: `worqr submit`, `worqr job`, `worqr jobs`
and `worqr flow`."""

from __future__ import annotations

import argparse
import math
from datetime import datetime
from typing import TYPE_CHECKING

from .._core.job_logs import MAX_LOG_LINES
from .._dedup import MODE_CODES
from .._jobs import LISTED_STATES, validate_job_id, validate_like_id
from .base import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_JOB_FAILED,
    EXIT_USAGE,
    add_connection_options,
    checked_by,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from .group_parser import group_name

if TYPE_CHECKING:
    from .parser import Subcommands

MAX_PRIORITY = 1_000_000  # as the client's submit
DEDUP_MODES = tuple(MODE_CODES)


job_id = checked_by(validate_job_id)
dedup_key = checked_by(lambda value: validate_like_id("dedup key", value))


def log_limit(value: str) -> int:
    number = positive_int(value)
    if number > MAX_LOG_LINES:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_LOG_LINES:,}, got {number}")
    return number


def priority(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if not -MAX_PRIORITY <= number <= MAX_PRIORITY:
        raise argparse.ArgumentTypeError(
            f"must be between -{MAX_PRIORITY:,} and {MAX_PRIORITY:,}, got {number}"
        )
    return number


def epoch_time(value: str) -> float:
    """``--at``: epoch seconds, or ISO 8601 with a time zone (a naive time would
    mean a different instant on every machine, so it is refused)."""
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        if not math.isfinite(seconds) or seconds < 0:
            raise argparse.ArgumentTypeError(f"must be epoch seconds >= 0, got {value}")
        return seconds
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not epoch seconds or an ISO 8601 time: {value!r}"
        ) from None
    if when.tzinfo is None or when.utcoffset() is None:
        raise argparse.ArgumentTypeError(
            f"{value!r} has no time zone: add one (e.g. Z or +02:00), or give epoch seconds"
        )
    return when.timestamp()


def job_state(value: str) -> str:
    if value not in LISTED_STATES:
        raise argparse.ArgumentTypeError(
            f"unknown state {value!r}: one of {', '.join(LISTED_STATES)}"
        )
    return value


def add_dedup_options(parser: argparse.ArgumentParser) -> None:
    """`worqr submit`'s dedup key (`worqr.Dedup`): not with --id or --unique."""
    parser.add_argument(
        "--dedup",
        type=dedup_key,
        metavar="KEY",
        help="a dedup key: a duplicate returns the key's job (see --dedup-mode); "
        "not with --id or --unique",
    )
    parser.add_argument(
        "--dedup-ttl",
        type=positive_float,
        metavar="SECONDS",
        help="with --dedup-mode throttle (the default): how long the key's first job "
        "answers every submit with the key",
    )
    parser.add_argument(
        "--dedup-mode",
        choices=DEDUP_MODES,
        metavar="MODE",
        help="throttle (needs --dedup-ttl), debounce (a waiting job takes the new payload), "
        "keep_last (as debounce, and one follow-up while it runs)",
    )


def add_job_commands(commands: Subcommands) -> None:
    parser = commands.add_on_queue(
        "submit",
        "Submit one job to a job queue: the PAYLOAD argument, else all of stdin (as bytes); "
        "prints its id, or with --wait its result.",
    )
    parser.add_argument("payload", nargs="?", metavar="PAYLOAD")
    parser.add_argument(
        "--id",
        type=job_id,
        help="the job's id (default: a new time-sortable one); while a job with this id "
        "is live, nothing is created (a duplicate, said on stderr)",
    )
    when = parser.add_mutually_exclusive_group()
    when.add_argument(
        "--delay", type=non_negative_float, metavar="SECONDS", help="due this many seconds from now"
    )
    when.add_argument(
        "--at",
        type=epoch_time,
        metavar="TIME",
        help="due at this time: epoch seconds, or ISO 8601 with a time zone "
        "(e.g. 2030-01-01T09:00:00Z); read against Redis's clock",
    )
    parser.add_argument(
        "--priority", type=priority, default=0, metavar="N", help="higher runs first (default: 0)"
    )
    parser.add_argument(
        "--group",
        type=group_name,
        metavar="G",
        help="its fair-share group: the queue takes one job of each group in turn, "
        "each under its own limits (see worqr limit --group)",
    )
    parser.add_argument(
        "--unique",
        action="store_true",
        help="at most one live job with this payload (a duplicate creates nothing)",
    )
    parser.add_argument(
        "--retries",
        type=non_negative_int,
        metavar="N",
        help="failures retried (default: the handler's, else 3)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        metavar="SECONDS",
        help="how long each attempt may run (default: the handler's, else no limit)",
    )
    add_dedup_options(parser)
    parser.add_argument(
        "--wait",
        action="store_true",
        help="wait for the result and print it instead of the id (str: as text with a "
        "newline; bytes: as is; None: nothing)",
    )
    parser.add_argument(
        "--wait-timeout",
        type=positive_float,
        metavar="SECONDS",
        help="with --wait: give up after this long (default: no limit)",
    )
    add_connection_options(parser)
    parser.epilog = (
        f"Exit codes: 0 submitted (with --wait: finished); {EXIT_FAILURE} failure at run time, "
        "or --wait-timeout passed (stderr names the job and its state: follow it with "
        f"`worqr job`); {EXIT_USAGE} bad usage or input (nothing is submitted); "
        f"{EXIT_JOB_FAILED} with --wait, the job failed or was cancelled (its error on "
        f"stderr); {EXIT_INTERRUPTED} interrupted (the job stays submitted)."
    )

    parser = commands.add_on_queue(
        "job",
        "Show one job (state, attempts, times, error, previews of payload and result), "
        "or cancel or retry it.",
    )
    parser.add_argument("id", type=job_id, metavar="ID")
    parser.add_argument(
        "--json",
        action="store_true",
        help="every field as JSON (times in epoch seconds; a bytes payload, result or "
        "progress as base64 under payload_b64, result_b64, progress_b64)",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--cancel", action="store_true", help="cancel it (delayed, queued, retrying or active)"
    )
    action.add_argument(
        "--retry", action="store_true", help="give a failed or cancelled job a new life"
    )
    action.add_argument(
        "--log",
        type=log_limit,
        nargs="?",
        const=100,
        metavar="N",
        help="show the newest N lines (default 100, at most 1,000) of the job's log, "
        "oldest first, one per line (with --json: {queue, id, log: [lines]})",
    )
    add_connection_options(parser)
    parser.epilog = (
        f"Exit codes: 0 shown (or cancelled, or retried); {EXIT_FAILURE} no such job, "
        "--cancel or --retry did not apply (stderr says why), or a failure at run time; "
        f"{EXIT_USAGE} bad usage."
    )

    _add_jobs(commands)

    parser = commands.add(
        "flow",
        "Show one flow (a chain or a tree of jobs): its state (running, finished, failed, "
        "cancelled) and each of its jobs that exists.",
    )
    parser.add_argument("id", type=job_id, metavar="ID")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_connection_options(parser)
    parser.epilog = (
        f"Exit codes: 0 shown; {EXIT_FAILURE} no such flow (or forgotten), or a failure "
        f"at run time; {EXIT_USAGE} bad usage."
    )


def _add_jobs(commands: Subcommands) -> None:
    parser = commands.add_on_queue(
        "jobs",
        "List a job queue's jobs: the count in each state and the first jobs of each, "
        "in lifecycle order (delayed, queued, active, retrying, finished, failed, cancelled); "
        "or cancel, retry, promote or purge them all (of --state), in bounded chunks, "
        "and print how many.",
    )
    parser.add_argument(
        "--state",
        type=job_state,
        help=f"only the jobs in this state: one of {', '.join(LISTED_STATES)}",
    )
    parser.add_argument(
        "--group",
        type=group_name,
        metavar="G",
        help="only the jobs of fair-share group G (listed, or with --cancel)",
    )
    parser.add_argument(
        "--limit",
        type=positive_int,
        metavar="N",
        help="at most N jobs of each state listed (default: 20); with --retry, --promote "
        "or --purge: at most N jobs acted on",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--cancel",
        action="store_true",
        help="cancel them (of --state, else every job not terminal); active ones' "
        "handlers are stopped",
    )
    action.add_argument(
        "--retry",
        action="store_true",
        help="give failed or cancelled ones (of --state, else both) a new life",
    )
    action.add_argument("--promote", action="store_true", help="queue the delayed ones now")
    action.add_argument(
        "--purge",
        action="store_true",
        help="forget the records of --state (finished, failed or cancelled)",
    )
    parser.add_argument(
        "--older-than",
        type=non_negative_float,
        metavar="SECONDS",
        help="with --purge: only records that ended this long ago or more (Redis's clock)",
    )
    add_connection_options(parser)
    parser.epilog = (
        f"Exit codes: 0 listed or done; {EXIT_FAILURE} failure at run time; {EXIT_USAGE} "
        "bad usage (nothing is changed)."
    )
