"""`worqr redis`: a throwaway redis-server in the foreground, for local development.

SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal closed) stop the server and
remove its data directory; if this process is SIGKILLed, the server gets
SIGTERM from the kernel (Linux: `worqr._parent_death`)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from ..embedded import EmbeddedRedis, EmbeddedRedisError
from .base import EXIT_FAILURE, EXIT_OK, CliError


def last_log_line(server: EmbeddedRedis) -> str:
    try:
        lines = server.log_path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(empty log)"


def run_redis(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    stop_signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, on_signal) for sig in stop_signals}
    server = EmbeddedRedis(port=args.port, appendonly=args.appendonly)
    try:
        try:
            server.start()
        except EmbeddedRedisError as error:
            # The full message ends with the server's log; keep the first line.
            raise CliError(str(error).splitlines()[0], EXIT_FAILURE) from None
        print(server.url, flush=True)
        print(
            f"redis-server pid {server.pid}, data in {server.directory}; Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        while not stop.wait(0.5):
            if server.pid is None:
                raise CliError(f"redis-server exited unexpectedly: {last_log_line(server)}")
        return EXIT_OK
    finally:
        server.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
