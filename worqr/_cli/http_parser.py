"""The arguments of `worqr http` (argparse only: Starlette is imported when the
command runs, so the rest of the command line works without ``worqr[http]``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .base import EXIT_USAGE, add_connection_options, positive_int

if TYPE_CHECKING:
    from .parser import Subcommands

DEFAULT_PORT = 8080
DEFAULT_MAX_BODY_BYTES = 1024 * 1024  # as worqr.http.config's


def listen_port(value: str) -> int:
    """A TCP port, or 0 for a free one (the URL printed on start names it)."""
    if value == "0":
        return 0
    number = positive_int(value)
    if number > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {number}")
    return number


def add_http_command(commands: Subcommands) -> None:
    parser = commands.add(
        "http",
        "Serve the HTTP API (JSON; OpenAPI at /openapi.json): submit and follow jobs, "
        "enqueue and cancel tasks, queues, workers, dead letters. Needs 'worqr[http]'.",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1); any but loopback needs --token-file",
    )
    parser.add_argument(
        "--port",
        type=listen_port,
        default=DEFAULT_PORT,
        help=f"TCP port (default: {DEFAULT_PORT}; 0: a free one, printed on start)",
    )
    parser.add_argument(
        "--token-file",
        metavar="FILE",
        help="file holding the bearer token every request must send "
        "(Authorization: Bearer TOKEN); never given on the command line, never logged",
    )
    parser.add_argument(
        "--show-payloads",
        action="store_true",
        help="include payloads and results in job records and dead-letter lists "
        "(default: left out; the result endpoint always returns the result)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="N",
        help=f"largest request body, answered 413 above (default: {DEFAULT_MAX_BODY_BYTES:,})",
    )
    parser.add_argument(
        "--no-access-log", action="store_true", help="do not log one line per request"
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default: INFO)")
    add_connection_options(parser)
    parser.epilog = (
        f"Exit codes: 0 stopped by SIGINT or SIGTERM; 1 failure at run time (the port is "
        f"taken, the extra is missing); {EXIT_USAGE} bad usage (a non-loopback --host "
        "without --token-file, an unreadable or short token)."
    )
