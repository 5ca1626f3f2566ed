"""The `worqr` command line's arguments: every subcommand and its options.

`worqr.cli` runs the subcommand parsed (its table names each one's function,
imported only when the command runs, so `worqr --help` stays fast) and handles
errors and exit codes.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn

from .base import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_JOB_FAILED,
    EXIT_NOT_REPLICATED,
    EXIT_USAGE,
    add_connection_options,
    add_durability_options,
    non_negative_float,
    non_negative_int,
    port_number,
    positive_float,
    positive_int,
    queue_name,
)
from .group_parser import add_groups_command
from .health import add_health_options
from .history_parser import add_history_command
from .http_parser import add_http_command
from .isolation_options import add_isolation_options
from .job_parser import add_job_commands
from .limit_parser import add_limit_command
from .pause_parser import add_pause_commands
from .schedule_parser import add_schedule_commands


class Parser(argparse.ArgumentParser):
    """Reports a usage error as one line (no usage dump) and exits with 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """A command whose last positional follows its options (``worqr schedule
        QUEUE NAME --every 5 PAYLOAD``) names it ``late_positional``: argparse
        fills positionals in one run, so a word after the options lands in the
        extras; it is that positional's."""
        parsed, extras = super().parse_known_args(args, namespace)
        late = getattr(parsed, "late_positional", None)
        lone = len(extras) == 1 and (not extras[0].startswith("-") or extras[0] == "-")
        if late and getattr(parsed, late, None) is None and lone:
            setattr(parsed, late, extras.pop())
        return parsed, extras


class Subcommands:
    """Adds subcommands; the parsed arguments name the one given (``command``)."""

    def __init__(self, commands: argparse._SubParsersAction[Parser]) -> None:
        self.commands = commands

    def add(self, name: str, text: str) -> Parser:
        parser = self.commands.add_parser(name, help=text, description=text)
        parser.set_defaults(verbose_logs=name in ("worker", "demo", "http"))
        return parser

    def add_on_queue(self, name: str, text: str, *, optional: bool = False) -> Parser:
        """A subcommand whose first argument is a queue's name, QUEUE (with
        ``optional``, it may be left out)."""
        parser = self.add(name, text)
        parser.add_argument(
            "queue", nargs="?" if optional else None, type=queue_name, metavar="QUEUE"
        )
        return parser


def _add_worker(commands: Subcommands) -> None:
    parser = commands.add(
        "worker",
        "Run the handlers of a worqr.Worker in one or more supervised processes.",
    )
    parser.add_argument(
        "target",
        metavar="MODULE:ATTR",
        help="where the Worker is: e.g. app:worker (a Worker, or a function returning one)",
    )
    parser.add_argument(
        "--processes",
        type=positive_int,
        default=1,
        help="worker processes; with more than 1, a parent supervises them (default: 1)",
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        help="handlers running at once per process (overrides the Worker)",
    )
    add_connection_options(parser)
    parser.add_argument(
        "--metrics-port",
        type=port_number,
        help="serve Prometheus metrics of every process on http://HOST:PORT/metrics",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address for --metrics-port (default: 127.0.0.1)",
    )
    parser.add_argument(
        "--grace",
        type=non_negative_float,
        help="seconds running handlers get to finish on SIGTERM before their tasks go "
        "back to the front of their queues (default: the Worker's, 30)",
    )
    parser.add_argument(
        "--burst",
        action="store_true",
        help="exit (0) once the queues have run dry: nothing queued, nothing running, "
        "nothing delayed or retrying due within --burst-wait; with --processes, each "
        "process bursts on its own",
    )
    parser.add_argument(
        "--burst-wait",
        type=non_negative_float,
        metavar="SECONDS",
        help="with --burst: wait for delayed and retrying jobs due within this long "
        "(default: 5); later ones are left for later, and counted",
    )
    parser.add_argument(
        "--no-history",
        action="store_const",
        const=False,
        help="keep no metrics history of the job queues (docs/history.md; "
        "default: the Worker's, kept)",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default: INFO)")
    timing = parser.add_argument_group("mesh timing (each overrides the Worker's settings)")
    timing.add_argument(
        "--ttl",
        type=positive_float,
        metavar="SECONDS",
        help="lease of each worker process: peers fail a process whose heartbeat has not "
        "landed for this long and take its tasks (default: the Worker's, 3)",
    )
    timing.add_argument(
        "--heartbeat",
        type=positive_float,
        metavar="SECONDS",
        help="seconds between heartbeats (and reaping turns); must be shorter than "
        "--ttl (default: the Worker's, 1)",
    )
    timing.add_argument(
        "--poll-interval",
        type=positive_float,
        metavar="SECONDS",
        help="seconds between fallback polls of each queue, in case a pub/sub wake-up "
        "was lost (default: the Worker's, 5)",
    )
    timing.add_argument(
        "--socket-timeout",
        type=positive_float,
        metavar="SECONDS",
        help="seconds a Redis command may take before it counts as failed "
        "(default: the Worker's, 10)",
    )
    timing.add_argument(
        "--max-blocked",
        type=positive_float,
        metavar="SECONDS",
        help="seconds a process's event loop may stay blocked (a blocking call in an async "
        "handler) while its lease is still kept; past it peers fail the process and run its "
        "tasks elsewhere (default: the Worker's, 60)",
    )
    add_health_options(parser)
    add_isolation_options(parser)
    supervision = parser.add_argument_group("supervision (with --processes > 1)")
    supervision.add_argument(
        "--max-restarts",
        type=non_negative_int,
        metavar="N",
        help="give up after N start-up failures (all processes together) within any "
        "--restart-window: a process that exits on its own (an error status or a crash) "
        "before its worker registered, or within 10 s after, is a crash loop (an import "
        "error, a bad setting); the next one stops every process with exit code 1. A "
        "killed process, or one that ran healthily for 10 s, is always restarted. "
        "0: stop at the first start-up failure (default: 10)",
    )
    supervision.add_argument(
        "--restart-window",
        type=positive_float,
        metavar="SECONDS",
        help="the window --max-restarts counts start-up failures over (default: 60)",
    )
    # Hidden: the supervisor's child mode.
    parser.add_argument("--supervised", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--process-index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--url-from-env", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--metrics-child", action="store_true", help=argparse.SUPPRESS)


def _add_admin(commands: Subcommands) -> None:
    parser = commands.add_on_queue(
        "enqueue",
        "Add tasks to the back of a queue: the TASK arguments, else one task per line "
        "of stdin (empty lines skipped).",
    )
    parser.add_argument("tasks", nargs="*", metavar="TASK")
    add_connection_options(parser)
    add_durability_options(parser)
    parser.epilog = (
        "Exit codes: 0 enqueued (and, with --wait-replicas N, held by N replicas); "
        f"{EXIT_FAILURE} failure at run time; {EXIT_USAGE} bad usage or input; "
        f"{EXIT_NOT_REPLICATED} enqueued on the master, but fewer than N replicas "
        "acknowledged within --wait-timeout: the tasks may be lost if the master fails "
        "before replicating them, and enqueueing them again would run them twice."
    )

    parser = commands.add_on_queue(
        "cancel",
        "Cancel every copy of a task, queued or running (running handlers are stopped).",
    )
    parser.add_argument("task", metavar="TASK")
    add_connection_options(parser)

    parser = commands.add_on_queue(
        "delete", "Delete a queue with its tasks, processes and dead letters."
    )
    parser.add_argument(
        "--if-idle",
        action="store_true",
        help="only when no job or task is in process; else exit 1 and delete nothing",
    )
    add_connection_options(parser)

    parser = commands.add_on_queue(
        "failed",
        "List a queue's dead letters (oldest first), or move them back to the queue, or drop them.",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--requeue", action="store_true", help="move them to the back of the queue, oldest first"
    )
    action.add_argument("--purge", action="store_true", help="delete them")
    add_connection_options(parser)


def _add_views(commands: Subcommands) -> None:
    parser = commands.add("status", "Show queues (queued, in process, failed) and workers.")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_connection_options(parser)

    parser = commands.add(
        "top",
        "A live view of queues and workers with rates, refreshed every second (Ctrl-C quits). "
        "Needs the 'rich' package (pip install 'worqr[cli]').",
    )
    add_connection_options(parser)
    parser.add_argument("--interval", type=positive_float, default=1.0, help=argparse.SUPPRESS)
    parser.add_argument("--iterations", type=positive_int, help=argparse.SUPPRESS)


def _add_tools(commands: Subcommands) -> None:
    parser = commands.add(
        "redis",
        "Run a throwaway redis-server on 127.0.0.1 in the foreground, print its URL; "
        "Ctrl-C stops it and removes its data.",
    )
    parser.add_argument("--port", type=port_number, help="TCP port (default: a free one)")
    parser.add_argument(
        "--appendonly", action="store_true", help="keep an append-only file (survives restarts)"
    )

    parser = commands.add(
        "exporter",
        "Serve the mesh's queue metrics (read from Redis at scrape time) for Prometheus.",
    )
    add_connection_options(parser)
    parser.add_argument("--port", type=port_number, help="port to serve on (default: 9150)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)"
    )
    parser.add_argument(
        "--stall-after",
        type=positive_float,
        metavar="SECONDS",
        help="a schedule this long past its next fire counts as stalled (default: 60)",
    )

    parser = commands.add(
        "demo",
        "Show the mesh at work: workers in several processes, thousands of tasks, "
        "cancellations, a worker killed mid-run, and every task accounted for.",
    )
    parser.add_argument(
        "--url", help="use this Redis instead of starting an embedded one (keys get a fresh prefix)"
    )
    parser.add_argument(
        "--tasks", type=positive_int, default=3000, help="tasks to enqueue (default: 3000)"
    )
    parser.add_argument(
        "--processes", type=positive_int, default=4, help="worker processes (default: 4)"
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="after the summary, leave the mesh, Redis, metrics and the web view running "
        "(with a trickle of work) and print their URLs, until Ctrl-C",
    )
    parser.add_argument("--log-level", default="WARNING", help=argparse.SUPPRESS)


def build(version: str) -> Parser:
    """The parser of every subcommand."""
    parser = Parser(
        prog="worqr",
        description="worqr: distributed work over Redis. Run `worqr COMMAND --help` for more.",
        epilog=f"Exit codes: 0 success; {EXIT_FAILURE} failure at run time; {EXIT_USAGE} bad "
        f"usage or input; {EXIT_NOT_REPLICATED} enqueue --wait-replicas: not confirmed by "
        f"enough replicas in time; {EXIT_JOB_FAILED} submit --wait: the job failed or was "
        f"cancelled; {EXIT_INTERRUPTED} interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"worqr {version}")
    commands = Subcommands(parser.add_subparsers(dest="command", metavar="COMMAND", required=True))
    _add_worker(commands)
    _add_admin(commands)
    add_job_commands(commands)
    add_schedule_commands(commands)
    add_limit_command(commands)
    add_pause_commands(commands)
    add_groups_command(commands)
    _add_views(commands)
    add_history_command(commands)
    _add_tools(commands)
    add_http_command(commands)
    return parser
