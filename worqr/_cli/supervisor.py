"""The parent of `worqr worker --processes N`: keeps N child processes running.

Children are real OS processes (``subprocess``), each one mesh member, so one can
crash or be SIGKILLed without touching the others; their peers then fail it and
take over its tasks, and the supervisor starts a replacement. The supervisor
never talks to Redis.

- A child says it is *ready* (its worker registered and joined its queues) by
  writing a byte on a pipe the supervisor gives it (`supervised.report_ready`;
  the pipe's fd is in ``$WORQR_READY_FD``).
- A child that exits while the supervisor is not stopping is always restarted,
  after a backoff, unless it failed at start-up (`restart_policy`: an exit of
  its own before it was ready, or soon after). Start-up failures are what a
  crash loop is made of: their backoff doubles while the slot keeps failing,
  and at most `max_start_failures` of them (all children together) are
  restarted within any `failure_window` seconds; the next stops everything
  with exit code 1 and a one-line `reason` (`worqr worker --max-restarts N
  --restart-window SECONDS`). Killed or healthy children never count: a kill
  storm cannot turn into an outage. A child exiting with `EXIT_USAGE` is a
  configuration mistake: restarting cannot help, so the supervisor stops.
- ``burst=True`` (`worqr worker --burst`): a child that exits with 0 has
  finished its burst and is not restarted; the supervisor exits once every
  child has (a crashed one is still restarted, and bursts anew).
- SIGTERM, SIGINT or SIGHUP (a closed terminal): forwarded to every child
  (SIGHUP as SIGTERM; they stop taking work, let their handlers finish within
  their grace period and return the rest); a second signal is forwarded too
  (children stop at once, still returning tasks); a third SIGKILLs them. Exit 0
  when every child stopped cleanly.
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

from .._checks import count
from .base import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .restart_policy import RestartPolicy
from .supervised import READY_ENV

__all__ = ["RestartPolicy", "Supervisor"]

logger = logging.getLogger("worqr.supervisor")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclass
class _Slot:
    index: int
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    ready_fd: int | None = None  # the read end of the child's readiness pipe
    ready_at: float | None = None
    failures: int = 0  # start-up failures in a row
    restart_at: float | None = None


class Supervisor:
    """Run ``command(index)`` for index 0..processes-1 and keep them running.

    ``command(index)`` returns the argv of child ``index``; ``env`` its
    environment; ``on_exit(pid)`` is called after each child exits (e.g. to drop
    its live metrics). `run()` blocks until shutdown and returns the exit code;
    when it gave up on a crash loop, `reason` says why in one line.
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
        burst: bool = False,
    ) -> None:
        count("processes", processes, low=1)
        self._command = command
        self._env = dict(env) if env is not None else None
        self.policy = policy or RestartPolicy()
        self._on_exit = on_exit
        self._tick = tick
        self._burst = burst  # a child's clean exit is its burst's end: not restarted
        self._slots = [_Slot(i) for i in range(processes)]
        self._signals: collections.deque[int] = collections.deque()
        self._wake = threading.Event()
        self._failures: collections.deque[float] = collections.deque()
        self._stopping = False
        self._signals_seen = 0
        self._exit_code = EXIT_OK
        self.reason: str | None = None

    # -- public --------------------------------------------------------------

    @property
    def pids(self) -> list[int]:
        """Pids of the children running now, by index."""
        return [s.process.pid for s in self._slots if s.process is not None]

    @property
    def stopping(self) -> bool:
        """Stopping every child (a stop signal came, or it gave up)."""
        return self._stopping

    def children(self) -> list[tuple[int, int | None, float]]:
        """Each slot's index, the pid of its child (None while none runs) and
        when that child started (monotonic); safe from any thread."""
        found = []
        for slot in self._slots:
            process = slot.process
            found.append((slot.index, None if process is None else process.pid, slot.started))
        return found

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
                if self._all_ended():
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
            for slot in self._slots:
                self._close_ready(slot)
        logger.info("all worker processes stopped (exit code %d)", self._exit_code)
        return self._exit_code

    # -- internals -------------------------------------------------------------

    def _all_ended(self) -> bool:
        if self._stopping:
            return all(s.process is None for s in self._slots)
        return self._burst and all(s.process is None and s.restart_at is None for s in self._slots)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.request_stop(signum)

    def _spawn(self, slot: _Slot) -> None:
        reader, writer = os.pipe()  # the child says it is ready on it
        os.set_blocking(reader, False)
        env = dict(self._env if self._env is not None else os.environ)
        env[READY_ENV] = str(writer)
        try:
            slot.process = subprocess.Popen(
                list(self._command(slot.index)),
                stdin=subprocess.PIPE,  # closed when we die: the child's cue to stop
                env=env,
                pass_fds=(writer,),
                process_group=0,  # a terminal's Ctrl-C reaches only the supervisor
            )
        except BaseException:
            os.close(reader)
            raise
        finally:
            os.close(writer)  # the child's copy is the only writer left
        slot.started = time.monotonic()
        slot.ready_fd, slot.ready_at = reader, None
        slot.restart_at = None

    def _check_ready(self, slot: _Slot) -> None:
        """Read the child's readiness byte if it has come (or EOF: it never will)."""
        if slot.ready_fd is None:
            return
        try:
            said = os.read(slot.ready_fd, 1)
        except BlockingIOError:
            return
        if said and slot.process is not None:
            slot.ready_at = time.monotonic()
            logger.debug(
                "worker process %d is ready (%.1f s after start)",
                slot.process.pid,
                slot.ready_at - slot.started,
            )
        self._close_ready(slot)

    def _close_ready(self, slot: _Slot) -> None:
        if slot.ready_fd is not None:
            os.close(slot.ready_fd)
            slot.ready_fd = None

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
                forwarded = signal.SIGTERM if signum == signal.SIGHUP else signum
                for process in live:
                    self._send(process, forwarded)

    def _reap_children(self) -> None:
        now = time.monotonic()
        for slot in self._slots:
            process = slot.process
            self._check_ready(slot)
            if process is None or (code := process.poll()) is None:
                continue
            self._check_ready(slot)  # a child may say ready, then die at once
            self._close_ready(slot)
            slot.process = None
            if process.stdin is not None:
                process.stdin.close()
            if self._on_exit is not None:
                try:
                    self._on_exit(process.pid)
                except Exception:
                    logger.exception("on_exit hook failed for pid %d", process.pid)
            if self._stopping:
                # A child still starting dies of the stop signal it was sent before
                # it could handle it: it held no work, so that is a clean stop.
                unready = slot.ready_at is None and -code in (signal.SIGTERM, signal.SIGINT)
                if code != 0 and not unready:
                    logger.warning("worker process %d exited with %s", process.pid, _how(code))
                    self._exit_code = max(self._exit_code, EXIT_FAILURE)
                continue
            if self._burst and code == EXIT_OK:
                logger.info("worker process %d finished its burst", process.pid)
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
        ready_for = None if slot.ready_at is None else now - slot.ready_at
        if not self.policy.start_up_failure(code, ready_for):
            if ready_for is not None and ready_for >= self.policy.stable_after:
                slot.failures = 0
            delay = self.policy.backoff
            logger.warning(
                "worker process %d exited with %s after %.1f s; restarting it in %.1f s",
                pid,
                _how(code),
                lived,
                delay,
            )
        else:
            when = "before it was ready" if slot.ready_at is None else "soon after it was ready"
            window = self.policy.failure_window
            while self._failures and now - self._failures[0] > window:
                self._failures.popleft()
            if len(self._failures) >= self.policy.max_start_failures:
                self.reason = (
                    f"worker processes keep failing at start-up: {len(self._failures) + 1} "
                    f"within {window:g} s (the limit is {self.policy.max_start_failures}, "
                    f"--max-restarts); the last, pid {pid}, exited with {_how(code)} {when} "
                    "(its output above says why); giving up"
                )
                logger.error("%s", self.reason)
                self._stop_all(EXIT_FAILURE)
                return
            self._failures.append(now)
            slot.failures += 1
            delay = self.policy.delay(slot.failures)
            logger.warning(
                "worker process %d exited with %s %s (%.1f s after start); restarting it "
                "in %.1f s (start-up failure %d of at most %d within %g s)",
                pid,
                _how(code),
                when,
                lived,
                delay,
                len(self._failures),
                self.policy.max_start_failures,
                window,
            )
        slot.restart_at = now + delay

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
