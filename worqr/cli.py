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
import logging
import os
import sys
from collections.abc import Sequence

from redis.exceptions import RedisClusterException, RedisError

from ._cli.base import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    apply_sentinel_options,
    quiet_library_logs,
)
from ._cli.parser import Parser, Runner, build
from ._errors import WorqrError
from ._version import __version__

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


def _submit(args: argparse.Namespace) -> int:
    from ._cli.jobs import submit

    return submit(args)


def _job(args: argparse.Namespace) -> int:
    from ._cli.jobs import job

    return job(args)


def _flow(args: argparse.Namespace) -> int:
    from ._cli.flows import flow

    return flow(args)


def _jobs(args: argparse.Namespace) -> int:
    from ._cli.jobs import jobs

    return jobs(args)


def _schedule(args: argparse.Namespace) -> int:
    from ._cli.schedules import schedule

    return schedule(args)


def _unschedule(args: argparse.Namespace) -> int:
    from ._cli.schedules import unschedule

    return unschedule(args)


def _limit(args: argparse.Namespace) -> int:
    from ._cli.limits import limit

    return limit(args)


def _schedules(args: argparse.Namespace) -> int:
    from ._cli.schedules import schedules

    return schedules(args)


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


def _http(args: argparse.Namespace) -> int:
    from ._cli.http_server import run_http

    return run_http(args)


def _demo(args: argparse.Namespace) -> int:
    from ._demo.run import run_demo

    return run_demo(args)


RUNNERS: dict[str, Runner] = {
    "worker": _worker,
    "enqueue": _enqueue,
    "cancel": _cancel,
    "delete": _delete,
    "failed": _failed,
    "submit": _submit,
    "job": _job,
    "jobs": _jobs,
    "schedule": _schedule,
    "unschedule": _unschedule,
    "schedules": _schedules,
    "limit": _limit,
    "flow": _flow,
    "status": _status,
    "top": _top,
    "redis": _redis,
    "exporter": _exporter,
    "demo": _demo,
    "http": _http,
}


def build_parser() -> Parser:
    return build(RUNNERS, __version__)


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
