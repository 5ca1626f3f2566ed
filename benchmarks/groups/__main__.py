"""`python -m benchmarks.groups`: the command line; runs the chosen targets."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import redis

from worqr.embedded import EmbeddedRedis

from ..harness import version_of
from . import __doc__ as OVERVIEW
from .common import (
    TARGETS,
    child,
    load,
)
from .fairness import fairness
from .flat import flat
from .memory import memory
from .pause import pause


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.groups",
        description=OVERVIEW,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", help="an existing Redis (default: start one)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (see below)")
    parser.add_argument("--only", default=",".join(TARGETS), help="targets, comma-separated")
    parser.add_argument("--flood", type=int, help="tenant A's jobs (100,000; quick 10,000)")
    parser.add_argument("--groups", type=int, help="flat: groups (100,000; quick 10,000)")
    parser.add_argument("--ops", type=int, default=200, help="calls per op and window")
    parser.add_argument("--rounds", type=int, help="windows per queue (11; quick 5)")
    parser.add_argument("--pause-jobs", type=int, help="queued jobs (150,000; quick 40,000)")
    parser.add_argument("--pause-after", type=float, help="s of drain around pause (1.5)")
    parser.add_argument("--memory-groups", type=int, help="groups (1,000,000; quick 50,000)")
    args = parser.parse_args(argv)
    sizes = {
        "flood": (100_000, 10_000),
        "groups": (100_000, 10_000),
        "rounds": (11, 5),
        "pause_jobs": (150_000, 40_000),
        "pause_after": (1.5, 1.5),
        "memory_groups": (1_000_000, 50_000),
    }
    for name, (full, quick) in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(*argv[1:4])
        return 0
    args = parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(chosen) - set(TARGETS)
    if unknown:
        raise SystemExit(f"unknown target: {', '.join(sorted(unknown))}")
    parts = {"fairness": fairness, "flat": flat, "pause": pause, "memory": memory}
    with contextlib.ExitStack() as stack:
        url = args.url or stack.enter_context(EmbeddedRedis()).url
        admin = stack.enter_context(contextlib.closing(redis.Redis.from_url(url)))
        info = admin.info("server")
        print(
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}: Python {sys.version.split()[0]}, Redis "
            f"{info['redis_version']}, redis-py {version_of('redis')}, worqr "
            f"{version_of('worqr')}, {os.cpu_count()} cores; load average {load()}",
            flush=True,
        )
        for name in TARGETS:
            if name in chosen:
                admin.flushall()  # each target starts from an empty server
                parts[name](url, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
