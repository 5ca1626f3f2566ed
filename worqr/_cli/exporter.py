"""`worqr exporter`: serve the mesh's queue metrics for Prometheus."""

from __future__ import annotations

import argparse

from redis.exceptions import RedisClusterException

from ..metrics.exporter import DEFAULT_PORT, run_exporter
from ..metrics.schedules import STALL_AFTER
from .base import CliError


def exporter(args: argparse.Namespace) -> int:
    try:
        run_exporter(
            args.url,
            args.prefix or "worqr",
            args.port or DEFAULT_PORT,
            args.host,
            cluster=args.cluster,
            stall_after=args.stall_after or STALL_AFTER,
        )
    except RedisClusterException as error:  # a cluster client reads the slot map at once
        raise CliError(f"Redis Cluster: {error}") from None
    except OSError as error:  # e.g. the port is taken
        raise CliError(f"cannot serve metrics on {args.host}:{args.port}: {error}") from None
    return 0
