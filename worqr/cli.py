"""The `worqr` command: a thin argparse dispatcher over one small module per job.

Exit codes: 0 success, 1 failure at run time (e.g. Redis unreachable), 2 bad
usage or input (e.g. a bad queue name or module path), 3 (`enqueue
--wait-replicas` only) enqueued on the master but not confirmed by enough
replicas in time, 130 interrupted.
Every error is one line on stderr; a user mistake never prints a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from redis.exceptions import RedisClusterException, RedisError

from ._cli.base import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_NOT_REPLICATED,
    EXIT_USAGE,
    CliError,
    add_connection_options,
    add_durability_options,
    apply_sentinel_options,
    non_negative_float,
    non_negative_int,
    port_number,
    positive_float,
    positive_int,
    queue_name,
    quiet_library_logs,
)
from ._errors import WorqrError

Runner = Callable[[argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """Reports a usage error as one line (no usage dump) and exits with 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# Each runner imports its module when the command runs: `worqr enqueue` does not
# load the worker runtime, and `worqr --help` stays fast.


def _worker(args: argparse.Namespace) -> int:
    from ._cli.worker import run_worker

    return run_worker(args)


def _enqueue(args: argparse.Namespace) -> int:
    from ._cli.produce import enqueue

    return enqueue(args)


def _cancel(args: argparse.Namespace) -> int:
    from ._cli.produce import cancel

    return cancel(args)


def _delete(args: argparse.Namespace) -> int:
    from ._cli.produce import delete

    return delete(args)


def _failed(args: argparse.Namespace) -> int:
    from ._cli.produce import failed

    return failed(args)


def _status(args: argparse.Namespace) -> int:
    from ._cli.status import status

    return status(args)


def _top(args: argparse.Namespace) -> int:
    from ._cli.top import top

    return top(args)


def _redis(args: argparse.Namespace) -> int:
    from ._cli.redis_server import run_redis

    return run_redis(args)


def _exporter(args: argparse.Namespace) -> int:
    from .metrics.exporter import DEFAULT_PORT, run_exporter

    try:
        run_exporter(
            args.url,
            args.prefix or "worqr",
            args.port or DEFAULT_PORT,
            args.host,
            cluster=args.cluster,
        )
    except RedisClusterException as error:  # a cluster client reads the slot map at once
        raise CliError(f"Redis Cluster: {error}") from None
    except OSError as error:  # e.g. the port is taken
        raise CliError(f"cannot serve metrics on {args.host}:{args.port}: {error}") from None
    return 0


def _demo(args: argparse.Namespace) -> int:
    from ._demo.run import run_demo

    return run_demo(args)


def _command(
    commands: argparse._SubParsersAction[Parser], name: str, runner: Runner, text: str
) -> Parser:
    parser = commands.add_parser(name, help=text, description=text)
    parser.set_defaults(run=runner, verbose_logs=name in ("worker", "demo"))
    return parser


def _add_worker(commands: argparse._SubParsersAction[Parser]) -> None:
    parser = _command(
        commands,
        "worker",
        _worker,
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
        help="in-flight tasks per process (overrides the Worker)",
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
    supervision = parser.add_argument_group("supervision (with --processes > 1)")
    supervision.add_argument(
        "--max-restarts",
        type=non_negative_int,
        metavar="N",
        help="restart dead worker processes at most N times (all together) within any "
        "--restart-window; the next death stops every process with exit code 1. "
        "0: never restart (default: 10)",
    )
    supervision.add_argument(
        "--restart-window",
        type=positive_float,
        metavar="SECONDS",
        help="the window --max-restarts counts over (default: 60)",
    )
    # Hidden: the supervisor's child mode.
    parser.add_argument("--supervised", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--process-index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--url-from-env", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--metrics-child", action="store_true", help=argparse.SUPPRESS)


def _add_admin(commands: argparse._SubParsersAction[Parser]) -> None:
    parser = _command(
        commands,
        "enqueue",
        _enqueue,
        "Add tasks to the back of a queue: the TASK arguments, else one task per line "
        "of stdin (empty lines skipped).",
    )
    parser.add_argument("queue", type=queue_name, metavar="QUEUE")
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

    parser = _command(
        commands,
        "cancel",
        _cancel,
        "Cancel every copy of a task, queued or running (running handlers are stopped).",
    )
    parser.add_argument("queue", type=queue_name, metavar="QUEUE")
    parser.add_argument("task", metavar="TASK")
    add_connection_options(parser)

    parser = _command(
        commands, "delete", _delete, "Delete a queue with its tasks, processes and dead letters."
    )
    parser.add_argument("queue", type=queue_name, metavar="QUEUE")
    add_connection_options(parser)

    parser = _command(
        commands,
        "failed",
        _failed,
        "List a queue's dead letters (oldest first), or move them back to the queue, or drop them.",
    )
    parser.add_argument("queue", type=queue_name, metavar="QUEUE")
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--requeue", action="store_true", help="move them to the back of the queue, oldest first"
    )
    action.add_argument("--purge", action="store_true", help="delete them")
    add_connection_options(parser)


def _add_views(commands: argparse._SubParsersAction[Parser]) -> None:
    parser = _command(
        commands, "status", _status, "Show queues (queued, in process, failed) and workers."
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    add_connection_options(parser)

    parser = _command(
        commands,
        "top",
        _top,
        "A live view of queues and workers with rates, refreshed every second (Ctrl-C quits). "
        "Needs the 'rich' package (pip install 'worqr[cli]').",
    )
    add_connection_options(parser)
    parser.add_argument("--interval", type=positive_float, default=1.0, help=argparse.SUPPRESS)
    parser.add_argument("--iterations", type=positive_int, help=argparse.SUPPRESS)


def _add_tools(commands: argparse._SubParsersAction[Parser]) -> None:
    parser = _command(
        commands,
        "redis",
        _redis,
        "Run a throwaway redis-server on 127.0.0.1 in the foreground, print its URL; "
        "Ctrl-C stops it and removes its data.",
    )
    parser.add_argument("--port", type=port_number, help="TCP port (default: a free one)")
    parser.add_argument(
        "--appendonly", action="store_true", help="keep an append-only file (survives restarts)"
    )

    parser = _command(
        commands,
        "exporter",
        _exporter,
        "Serve the mesh's queue metrics (read from Redis at scrape time) for Prometheus.",
    )
    add_connection_options(parser)
    parser.add_argument("--port", type=port_number, help="port to serve on (default: 9150)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)"
    )

    parser = _command(
        commands,
        "demo",
        _demo,
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
    parser.add_argument("--log-level", default="WARNING", help=argparse.SUPPRESS)


def build_parser() -> Parser:
    parser = Parser(
        prog="worqr",
        description="worqr: distributed work over Redis. Run `worqr COMMAND --help` for more.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"worqr {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_worker(commands)
    _add_admin(commands)
    _add_views(commands)
    _add_tools(commands)
    return parser


def _configure_logging(args: argparse.Namespace) -> None:
    if not args.verbose_logs:
        quiet_library_logs()
        return
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        raise CliError(f"unknown --log-level {args.log_level!r}", EXIT_USAGE)
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s"
    )


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `worqr` command line; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    where = f"worqr {args.command}"
    try:
        _configure_logging(args)
        apply_sentinel_options(args)
        code: int = args.run(args)
        return code
    except CliError as error:
        print(f"{where}: error: {_one_line(error)}", file=sys.stderr)
        return error.code
    except (WorqrError, RedisError) as error:
        print(f"{where}: error: {_one_line(error)}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print(f"{where}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `worqr failed q | head`: the reader left
        # Point stdout at /dev/null so the interpreter's final flush does not fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
