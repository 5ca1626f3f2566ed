"""The `worqr` command: a thin argparse dispatcher over one small module per job.

Exit codes: 0 success, 1 failure at run time (e.g. Redis unreachable; for
`submit --wait`, also a wait that timed out), 2 bad usage or input (e.g. a bad
queue name or module path), 3 (`enqueue --wait-replicas` only) enqueued on the
master but not confirmed by enough replicas in time, 4 (`submit --wait` only)
the job failed or was cancelled, 130 interrupted.
Every error is one line on stderr; a user mistake never prints a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from redis.exceptions import RedisError

from ._cli.base import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    apply_sentinel_options,
    quiet_library_logs,
)
from ._cli.parser import Parser, build
from ._errors import WorqrError
from ._version import __version__

Runner = Callable[[argparse.Namespace], int]
"""What runs a subcommand: it takes the parsed arguments and returns the exit code."""

COMMANDS: Final[Mapping[str, str]] = {
    "worker": "worqr._cli.worker:run_worker",
    "enqueue": "worqr._cli.produce:enqueue",
    "cancel": "worqr._cli.produce:cancel",
    "delete": "worqr._cli.produce:delete",
    "failed": "worqr._cli.produce:failed",
    "submit": "worqr._cli.jobs:submit",
    "job": "worqr._cli.jobs:job",
    "jobs": "worqr._cli.jobs:jobs",
    "schedule": "worqr._cli.schedules:schedule",
    "unschedule": "worqr._cli.schedules:unschedule",
    "schedules": "worqr._cli.schedules:schedules",
    "limit": "worqr._cli.limits:limit",
    "pause": "worqr._cli.pausing:pause",
    "resume": "worqr._cli.pausing:resume",
    "groups": "worqr._cli.groups:groups",
    "flow": "worqr._cli.flows:flow",
    "status": "worqr._cli.status:status",
    "top": "worqr._cli.top:top",
    "history": "worqr._cli.history:history",
    "redis": "worqr._cli.redis_server:run_redis",
    "exporter": "worqr._cli.exporter:exporter",
    "demo": "worqr._demo.run:run_demo",
    "http": "worqr._cli.http_server:run_http",
}
"""The function that runs each subcommand, as ``module:function``: its module is
imported only when the command runs, so `worqr enqueue` does not load the worker
runtime and `worqr --help` stays fast. A test checks that every subcommand has
one, and that each takes the parsed arguments and returns the exit code."""


def command_function(name: str) -> Runner:
    """The function of subcommand ``name``, its module imported now."""
    module, _, function = COMMANDS[name].partition(":")
    found: Runner = getattr(importlib.import_module(module), function)
    return found


def build_parser() -> Parser:
    return build(__version__)


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
        return command_function(args.command)(args)
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
