"""`worqr worker --isolated`: the options that run handlers in child processes."""

from __future__ import annotations

import argparse
import re

from .base import positive_int

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMG]i?B|B)?", re.IGNORECASE)
_UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}


def byte_size(value: str) -> int:
    """``200MB``, ``1.5GiB``, ``4096``: a number of bytes (kB = 1000, KiB = 1024)."""
    match = _SIZE.fullmatch(value.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {value!r} (say e.g. 200MB or 1GiB)")
    number, unit = float(match[1]), (match[2] or "b").lower()
    size = int(number * _UNITS[unit])
    if size < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {value!r}")
    return size


def add_isolation_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("isolated handlers (docs/isolation.md)")
    group.add_argument(
        "--isolated",
        action="store_const",
        const=True,
        help="run every sync handler in a child process: stopped for good past a job's "
        "timeout or on a cancel, a crash fails only its own job (default: the Worker's)",
    )
    group.add_argument(
        "--max-jobs-per-child",
        type=positive_int,
        metavar="N",
        help="replace a handler child after N jobs (default: never for that reason)",
    )
    group.add_argument(
        "--max-memory-per-child",
        type=byte_size,
        metavar="SIZE",
        help="replace a handler child whose resident memory is above SIZE after a job, "
        "e.g. 200MB (default: never for that reason)",
    )
