"""The parent of `worqr worker --processes N`: keeps N child processes running.

Children are real OS processes (``subprocess``), each one mesh member, so one can
crash or be SIGKILLed without touching the others; their peers then fail it and
take over its tasks, and the supervisor starts a replacement. The supervisor
never talks to Redis.

- A child that exits while the supervisor is not stopping is restarted after a
  backoff that doubles while it keeps dying young. At most `storm_restarts`
  restarts (all children together) are made within any `storm_window` seconds:
  a child that dies when that many were already made is a restart storm (e.g. a
  handler module that crashes at import), and everything stops with exit code 1
  (`worqr worker --max-restarts N --restart-window SECONDS`). A child exiting with `EXIT_USAGE` is a
  configuration mistake: restarting cannot help, so the supervisor stops.
- SIGTERM or SIGINT: forwarded to every child (they stop taking work, let their
  handlers finish within their grace period and return the rest); a second
  signal is forwarded too (children stop at once, still returning tasks); a
  third SIGKILLs them. Exit 0 when every child stopped cleanly.
- Children run in their own process group, so a terminal's Ctrl-C reaches only
  the supervisor, which forwards it once. Each child's stdin is a pipe from the
  supervisor: if the supervisor dies (even by SIGKILL) the children see EOF and
  stop gracefully instead of running on as orphans.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType

from .base import EXIT_FAILURE, EXIT_OK, EXIT_USAGE

logger = logging.getLogger("worqr.supervisor")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@dataclass(frozen=True)
class RestartPolicy:
    """When and how often dead children are restarted.

    Attributes:
        backoff: seconds before the first restart of a child that died young.
        max_backoff: cap of the doubling backoff.
        stable_after: a child that lived this long died "old": its backoff resets.
        storm_restarts: most restarts (all children together) within any
            `storm_window` seconds; a child that dies when that many restarts were
            already made stops the supervisor with exit code 1. 0: never restart
            (the first unexpected exit stops everything).
        storm_window: seconds over which `storm_restarts` is counted.
    """

    backoff: float = 0.2
    max_backoff: float = 10.0
    stable_after: float = 10.0
    storm_restarts: int = 10
    storm_window: float = 60.0

    def __post_init__(self) -> None:
        for name in ("backoff", "max_backoff", "stable_after", "storm_window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"{name} must be a number, not {type(value).__name__}")
            if not 0 < value < float("inf"):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        restarts = self.storm_restarts
        if isinstance(restarts, bool) or not isinstance(restarts, int) or restarts < 0:
            raise ValueError(f"storm_restarts must be an integer >= 0, got {restarts!r}")

    def delay(self, young_deaths: int) -> float:
        return float(min(self.max_backoff, self.backoff * 2 ** max(0, young_deaths - 1)))


@dataclass
class _Slot:
    index: int
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    young_deaths: int = 0
    restart_at: float | None = None


class Supervisor:
    """Run ``command(index)`` for index 0..processes-1 and keep them running.

    ``command(index)`` returns the argv of child ``index``; ``env`` its
    environment; ``on_exit(pid)`` is called after each child exits (e.g. to drop
    its live metrics). `run()` blocks until shutdown and returns the exit code.
    """

    def __init__(
        self,
        command: Callable[[int], Sequence[str]],
        processes: int,
        *,
        env: Mapping[str, str] | None = None,
        policy: RestartPolicy | None = None,
        on_exit: Callable[[int], object] | None = None,
        tick: float = 0.05,
    ) -> None:
        if processes < 1:
            raise ValueError("processes must be at least 1")
        self._command = command
        self._env = dict(env) if env is not None else None
        self.policy = policy or RestartPolicy()
        self._on_exit = on_exit
        self._tick = tick
        self._slots = [_Slot(i) for i in range(processes)]
        self._signals: collections.deque[int] = collections.deque()
        self._wake = threading.Event()
        self._restarts: collections.deque[float] = collections.deque()
        self._stopping = False
        self._signals_seen = 0
        self._exit_code = EXIT_OK

    # -- public --------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        """Pids of the children running now, by index."""
        return [s.process.pid for s in self._slots if s.process is not None]

    def request_stop(self, signum: int = signal.SIGTERM) -> None:
        """Stop as if ``signum`` had arrived (safe from any thread or a signal handler)."""
        self._signals.append(signum)
        self._wake.set()

    def run(self) -> int:
        """Start the children and supervise them until they have all stopped."""
        previous = {sig: signal.signal(sig, self._on_signal) for sig in STOP_SIGNALS}
        try:
            for slot in self._slots:
                self._spawn(slot)
            logger.info("started %d worker processes: pids %s", len(self._slots), self.pids)
            while True:
                self._handle_signals()
                self._reap_children()
                if self._stopping and all(s.process is None for s in self._slots):
                    break
                self._restart_due()
                self._wake.wait(self._tick)
                self._wake.clear()
        except BaseException:
            self._kill_all()  # never leave orphans behind on an unexpected error
            raise
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        logger.info("all worker processes stopped (exit code %d)", self._exit_code)
        return self._exit_code

    # -- internals -------------------------------------------------------------

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.request_stop(signum)

    def _spawn(self, slot: _Slot) -> None:
        slot.process = subprocess.Popen(
            list(self._command(slot.index)),
            stdin=subprocess.PIPE,  # closed when we die: the child's cue to stop
            env=self._env,
            process_group=0,  # a terminal's Ctrl-C reaches only the supervisor
        )
        slot.started = time.monotonic()
        slot.restart_at = None

    def _send(self, process: subprocess.Popen[bytes], signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # exited meanwhile: the next reap sees it
            process.send_signal(signum)

    def _handle_signals(self) -> None:
        while self._signals:
            signum = self._signals.popleft()
            self._signals_seen += 1
            self._stopping = True
            live = [s.process for s in self._slots if s.process is not None]
            if self._signals_seen >= 3:
                logger.warning("third stop signal: killing %d worker processes", len(live))
                for process in live:
                    self._send(process, signal.SIGKILL)
            else:
                name = signal.Signals(signum).name
                how = "gracefully" if self._signals_seen == 1 else "now"
                logger.info("%s: stopping %d worker processes %s", name, len(live), how)
                for process in live:
                    self._send(process, signum)

    def _reap_children(self) -> None:
        now = time.monotonic()
        for slot in self._slots:
            process = slot.process
            if process is None or (code := process.poll()) is None:
                continue
            slot.process = None
            if process.stdin is not None:
                process.stdin.close()
            if self._on_exit is not None:
                try:
                    self._on_exit(process.pid)
                except Exception:
                    logger.exception("on_exit hook failed for pid %d", process.pid)
            if self._stopping:
                if code != 0:
                    logger.warning("worker process %d exited with %s", process.pid, _how(code))
                    self._exit_code = max(self._exit_code, EXIT_FAILURE)
                continue
            self._child_died(slot, process.pid, code, now)

    def _child_died(self, slot: _Slot, pid: int, code: int, now: float) -> None:
        if code == EXIT_USAGE:
            logger.error(
                "worker process %d exited with a usage error; not restarting: stopping", pid
            )
            self._stop_all(EXIT_USAGE)
            return
        lived = now - slot.started
        slot.young_deaths = 1 if lived >= self.policy.stable_after else slot.young_deaths + 1
        while self._restarts and now - self._restarts[0] > self.policy.storm_window:
            self._restarts.popleft()
        if len(self._restarts) >= self.policy.storm_restarts:
            logger.error(
                "worker process %d exited with %s: %d restarts within the last %g s "
                "already (the limit, --max-restarts); giving up",
                pid,
                _how(code),
                len(self._restarts),
                self.policy.storm_window,
            )
            self._stop_all(EXIT_FAILURE)
            return
        self._restarts.append(now)
        delay = self.policy.delay(slot.young_deaths)
        slot.restart_at = now + delay
        logger.warning(
            "worker process %d exited with %s after %.1f s; restarting it in %.1f s",
            pid,
            _how(code),
            lived,
            delay,
        )

    def _restart_due(self) -> None:
        if self._stopping:
            return
        now = time.monotonic()
        for slot in self._slots:
            if slot.process is None and slot.restart_at is not None and now >= slot.restart_at:
                self._spawn(slot)
                assert slot.process is not None
                logger.info("restarted worker process %d as pid %d", slot.index, slot.process.pid)

    def _stop_all(self, code: int) -> None:
        self._exit_code = max(self._exit_code, code)
        if not self._stopping:
            self._stopping = True
            self._signals_seen = 1
            for slot in self._slots:
                slot.restart_at = None
                if slot.process is not None:
                    self._send(slot.process, signal.SIGTERM)

    def _kill_all(self) -> None:
        for slot in self._slots:
            if slot.process is not None:
                self._send(slot.process, signal.SIGKILL)
                slot.process.wait()
                slot.process = None


def _how(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"status {code}"


def watch_parent(on_orphaned: Callable[[], object]) -> threading.Thread:
    """In a supervised child: call ``on_orphaned()`` when stdin (the pipe from
    the supervisor) reaches EOF, i.e. when the supervisor has died."""

    def wait_for_eof() -> None:
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        logger.warning("the supervisor is gone; stopping this worker process")
        on_orphaned()

    thread = threading.Thread(target=wait_for_eof, name="worqr-parent-watch", daemon=True)
    thread.start()
    return thread
