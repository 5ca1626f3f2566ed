"""What every `worqr` subcommand shares: the user-error type, the exit codes,
argument checks and the short-lived client the admin commands use."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from collections.abc import Callable, Iterator

from redis.exceptions import RedisClusterException, RedisError

from .._checks import MAX_COUNT, MAX_SECONDS
from .._clients.connect import resolve_url
from .._clients.sentinel import cli_url
from .._clients.sync_client import Worqr
from .._keys import validate_name
from .._settings import Settings

EXIT_OK = 0
EXIT_FAILURE = 1  # something went wrong at run time (e.g. Redis unreachable)
EXIT_USAGE = 2  # the command line or its input was wrong (argparse uses 2 too)
EXIT_NOT_REPLICATED = 3  # enqueued on the master, but too few replicas confirmed it in time
EXIT_JOB_FAILED = 4  # `submit --wait`: the job failed or was cancelled
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report it

CLI_RETRY_DEADLINE = 3.0
"""Seconds an admin command keeps retrying an unreachable Redis before giving up
(a worker's client keeps its own, longer deadline)."""

WAIT_TIMEOUT_MAX = 3600.0
"""Longest ``--wait-timeout``: the socket timeout must outlast the wait, and a
wait of more than an hour is a mistake rather than a plan."""


class CliError(Exception):
    """A problem to report as one line on stderr, exiting with ``code``."""

    def __init__(self, message: str, code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.code = code


def argv_value(value: str) -> str | bytes:
    """A task or payload typed as an argument: the text, or its bytes when they
    are not UTF-8 (argv that is not arrives with surrogate escapes)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(value)
    return value


def checked_by(validate: Callable[[str], str]) -> Callable[[str], str]:
    """An argparse ``type=`` that returns ``validate(value)``: its `TypeError` or
    `ValueError` becomes a usage error carrying the validator's own message."""

    def convert(value: str) -> str:
        try:
            return validate(value)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return convert


queue_name = checked_by(lambda value: validate_name(value, "queue name"))
"""argparse ``type=`` for queue names: a bad name is a usage error."""
prefix_name = checked_by(lambda value: validate_name(value, "prefix"))


def _integer(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if abs(number) > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_COUNT:,}, got {value}")
    return number


def _number(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None


def positive_int(value: str) -> int:
    number = _integer(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def non_negative_int(value: str) -> int:
    number = _integer(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {number}")
    return number


def positive_float(value: str) -> float:
    """Seconds > 0, at most the library's `MAX_SECONDS`."""
    number = _number(value)
    if not number > 0:  # NaN fails every comparison
        raise argparse.ArgumentTypeError(f"must be a positive number, got {value}")
    return _at_most_max_seconds(number, value)


def non_negative_float(value: str) -> float:
    """Seconds >= 0, at most the library's `MAX_SECONDS`."""
    number = _number(value)
    if not number >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {value}")
    return _at_most_max_seconds(number, value)


def _at_most_max_seconds(number: float, value: str) -> float:
    if number > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds up to {MAX_SECONDS:,}, got {value}"
        )
    return number


def wait_seconds(value: str) -> float:
    number = positive_float(value)
    if number > WAIT_TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(f"must be at most {WAIT_TIMEOUT_MAX:g}, got {value}")
    return number


def port_number(value: str) -> int:
    number = positive_int(value)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {number}")
    return number


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        help="Redis URL (default: $WORQR_REDIS_URL, else redis://127.0.0.1:6379/0)",
    )
    parser.add_argument(
        "--sentinel",
        action="append",
        metavar="HOST:PORT",
        help="reach Redis through this Sentinel (repeat for each sentinel; needs "
        "--service-name); the same as --url redis+sentinel://HOST:PORT,.../SERVICE",
    )
    parser.add_argument(
        "--service-name", metavar="NAME", help="the master's name in Sentinel (with --sentinel)"
    )
    parser.add_argument(
        "--prefix", type=prefix_name, help="key prefix of the mesh (default: worqr)"
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="the URL names a node of a Redis Cluster (default: a standalone Redis)",
    )
    # Hidden: how long an unreachable Redis is retried; tests make it short.
    parser.add_argument(
        "--retry-deadline",
        type=positive_float,
        default=CLI_RETRY_DEADLINE,
        help=argparse.SUPPRESS,
    )


def add_durability_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("durability (a master with replicas, plain or Sentinel)")
    group.add_argument(
        "--wait-replicas",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="after each batch of up to 1,000 tasks, wait (Redis WAIT) until N replicas "
        "hold it; if fewer confirm within --wait-timeout, exit with code "
        f"{EXIT_NOT_REPLICATED} (the tasks stay enqueued on the master). 0, the default, "
        "does not wait",
    )
    group.add_argument(
        "--wait-timeout",
        type=wait_seconds,
        metavar="SECONDS",
        help="how long each batch waits for --wait-replicas acknowledgements "
        f"(default: 1; at most {WAIT_TIMEOUT_MAX:g}; needs --wait-replicas >= 1)",
    )


def check_durability(args: argparse.Namespace) -> None:
    """Refuse a ``--wait-timeout`` that means nothing, before anything connects."""
    if not args.wait_replicas and args.wait_timeout is not None:
        raise CliError("--wait-timeout needs --wait-replicas >= 1", EXIT_USAGE)


@contextlib.contextmanager
def admin_client(
    args: argparse.Namespace, *, wait_replicas: int = 0, wait_timeout: float | None = None
) -> Iterator[Worqr]:
    """A client that only produces and reads (it never registers as a worker).
    With ``wait_replicas``, its enqueues wait for replicas (`Settings.wait_replicas`)."""
    timeout = Settings().wait_timeout if wait_timeout is None else wait_timeout
    # A reply must be able to take as long as the WAIT before it, or a late
    # confirmation would end as an ambiguous timeout: 5 s more than the wait.
    waited = timeout + 5.0 if wait_replicas else 0.0
    settings = Settings(
        retry_deadline=args.retry_deadline,
        socket_timeout=max(args.retry_deadline, 5.0, waited),
        wait_replicas=wait_replicas,
        wait_timeout=timeout,
    )
    try:
        client = Worqr(
            resolve_url(args.url), prefix=args.prefix, settings=settings, cluster=args.cluster
        )
    except ValueError as error:  # redis-py rejects malformed URLs with ValueError
        raise CliError(f"bad Redis URL: {error}", EXIT_USAGE) from None
    except (RedisError, RedisClusterException) as error:  # a cluster client connects at once
        raise CliError(f"Redis Cluster: {error}") from None
    with client:
        yield client


def apply_sentinel_options(args: argparse.Namespace) -> None:
    """Turn ``--sentinel``/``--service-name`` into the equivalent ``args.url``."""
    if not hasattr(args, "sentinel"):
        return
    try:
        args.url = cli_url(args.sentinel, args.service_name, args.url)
    except ValueError as error:
        raise CliError(str(error), EXIT_USAGE) from None


def quiet_library_logs() -> None:
    """Admin commands report errors themselves; the client's retry warnings
    would only add noise (and extra lines) on stderr."""
    logging.getLogger("worqr").setLevel(logging.CRITICAL)
