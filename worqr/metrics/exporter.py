"""`worqr exporter`: serve the mesh-wide figures (`MeshCollector`) standalone.

Run one per mesh (not one per worker): every worker exporting queue lengths
would multiply them in ``sum()``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

from prometheus_client import CollectorRegistry
from redis.exceptions import RedisClusterException, RedisError

from .._keys import validate_name
from .collector import MeshCollector
from .schedules import STALL_AFTER
from .serve import serve

DEFAULT_PORT = 9150

logger = logging.getLogger("worqr.metrics")


def exporter_registry(
    url: str | None, prefix: str, *, cluster: bool = False, stall_after: float = STALL_AFTER
) -> tuple[CollectorRegistry, MeshCollector]:
    registry = CollectorRegistry()
    collector = MeshCollector.from_url(
        url, validate_name(prefix, "prefix"), cluster=cluster, stall_after=stall_after
    )
    registry.register(collector)
    return registry, collector


def run_exporter(
    url: str | None = None,
    prefix: str = "worqr",
    port: int = DEFAULT_PORT,
    host: str = "127.0.0.1",
    stop: threading.Event | None = None,
    *,
    cluster: bool = False,
    stall_after: float = STALL_AFTER,
) -> None:
    """Serve ``/metrics`` for the mesh until ``stop`` is set (or SIGTERM/SIGINT
    when called from the main thread). Redis being down is not an error: scrapes
    report ``worqr_collector_up 0`` until it is back. A schedule ``stall_after``
    seconds past its next fire counts in ``worqr_schedules_stalled``."""
    stop = stop or threading.Event()
    registry, collector = exporter_registry(url, prefix, cluster=cluster, stall_after=stall_after)
    server = serve(port, host, registry)
    logger.info("worqr exporter serving http://%s:%d/metrics", host, server.port)
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():

        def on_signal(signum: int, frame: FrameType | None) -> None:
            stop.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.close()
        collector.close()


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The exporter's options (``--url``, ``--prefix``, ``--port``, ``--host``,
    ``--stall-after``)."""
    parser = parser or argparse.ArgumentParser(
        prog="worqr exporter", description="Serve the mesh's queue metrics for Prometheus."
    )
    parser.add_argument("--url", help="Redis URL (default: $WORQR_REDIS_URL, then local)")
    parser.add_argument("--prefix", default="worqr", help="key prefix of the mesh")
    parser.add_argument(
        "--cluster", action="store_true", help="the URL names a node of a Redis Cluster"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to serve on")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: loopback only)"
    )
    parser.add_argument(
        "--stall-after",
        type=float,
        default=STALL_AFTER,
        metavar="SECONDS",
        help="a schedule this long past its next fire counts as stalled (default: 60)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for ``worqr exporter``; returns the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        run_exporter(
            args.url,
            args.prefix,
            args.port,
            args.host,
            cluster=args.cluster,
            stall_after=args.stall_after,
        )
    # Port taken, bad prefix, a cluster out of reach: one line, no traceback.
    except (OSError, ValueError, RedisError, RedisClusterException) as error:
        print(f"worqr exporter: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # python -m worqr.metrics.exporter
    raise SystemExit(main())
