"""`worqr redis`: a throwaway redis-server in the foreground, for local development.

SIGINT (Ctrl-C), SIGTERM and SIGHUP (the terminal closed) stop the server and
remove its data directory; if this process is SIGKILLed, the server gets
SIGTERM from the kernel (Linux: `worqr._parent_death`)."""

from __future__ import annotations

import argparse
import contextlib
import select
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from ..embedded import EmbeddedRedis, EmbeddedRedisError
from .base import EXIT_FAILURE, EXIT_OK, CliError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

# What signal.signal returns (None: a handler not installed from Python).
Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class StopSignals:
    """While installed, notes the first of `signals` to arrive; `wait` returns
    as soon as one has.

    The handler only assigns an attribute: it takes no lock, because it runs
    between any two bytecodes of the main thread, also inside itself when a
    second signal lands while it runs. A closed terminal sends two SIGHUPs well
    under a millisecond apart (the shell relays it to its jobs, then the kernel
    sends it to the foreground group as the shell exits). A handler calling
    `threading.Event.set()` (which takes the event's non-reentrant lock)
    deadlocked there, leaving the server running (issue 27). The interpreter's
    wakeup fd, written by its C-level handler, wakes `wait` instead."""

    def __init__(self, *signals: signal.Signals) -> None:
        self.signals = signals
        self.received: int | None = None
        self._previous: dict[signal.Signals, Handler] = {}
        self._previous_wakeup = -1
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)  # set_wakeup_fd needs it; a full buffer drops bytes

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum

    def __enter__(self) -> StopSignals:
        # No warning on a full buffer: it would go to a terminal that may be gone.
        self._previous_wakeup = signal.set_wakeup_fd(
            self._writer.fileno(), warn_on_full_buffer=False
        )
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for sig, handler in self._previous.items():
            if handler is not None:  # not installed from Python: cannot be put back
                signal.signal(sig, handler)
        # Before closing the socket, whose fd number may be reused at once.
        signal.set_wakeup_fd(self._previous_wakeup)
        self._reader.close()
        self._writer.close()

    def wait(self, timeout: float) -> bool:
        """Whether a stop signal has arrived, waiting up to `timeout` seconds for one."""
        if self.received is None:
            # A signal after the check above still wakes select: its byte is in the socket.
            select.select([self._reader], [], [], timeout)
            with contextlib.suppress(BlockingIOError):
                while self._reader.recv(4096):
                    pass
        return self.received is not None


def last_log_line(server: EmbeddedRedis) -> str:
    try:
        lines = server.log_path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(empty log)"


def run_redis(args: argparse.Namespace) -> int:
    with StopSignals(*STOP_SIGNALS) as stop:
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
            # Still under StopSignals: a further stop signal cannot cut the cleanup short.
            server.close()
