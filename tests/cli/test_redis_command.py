"""`worqr redis` on a real terminal: when the terminal closes (its pseudo-terminal's
master side closes, as when a terminal emulator's window, an ssh session or a
tmux pane goes away) the server stops and its data directory goes (issue 27).

Who gets the hangup: the kernel sends SIGHUP and SIGCONT to the terminal's
session leader; a job-control shell relays SIGHUP to its jobs, and as it exits
the kernel sends SIGHUP and SIGCONT to the foreground process group. So under a
shell `worqr redis` and its redis-server (which ignores SIGHUP) get two SIGHUPs,
well under a millisecond apart; the second could land while the first was
being handled, and that deadlocked the handler (`StopSignals`' docstring)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import termios
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.support import ROOT
from tests.support.cli import WORQR, cli_env
from tests.support.processes import kill_pids, pid_alive, stop
from tests.support.waiting import wait_until
from worqr.embedded import free_port

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux"),
        reason="a pseudo-terminal's hangup as Linux delivers it (TIOCSCTTY, /proc)",
    ),
    pytest.mark.slow,
]

STARTED = re.compile(rb"redis-server pid (\d+), data in (\S+); Ctrl-C stops it\r?\n")

# `worqr` whose signal handlers (whatever it installs) get their signal again at
# every line they run, and every line of what they call: a second SIGHUP landing
# while the first is handled, which a shell's relay and the kernel's SIGHUP make
# possible, made certain. `signal.raise_signal` runs the handler, nested, before
# it returns.
OVERLAPPING = textwrap.dedent(
    """
    import signal, sys
    from worqr.cli import main

    install = signal.signal
    handling = False

    def overlapping(handler):
        def handle(signum, frame):
            global handling
            if handling:  # the nested delivery
                return handler(signum, frame)
            handling = True

            def again(frame, event, arg):
                if event == "line":
                    signal.raise_signal(signum)
                return again

            sys.settrace(again)
            try:
                return handler(signum, frame)
            finally:
                sys.settrace(None)
                handling = False

        return handle

    signal.signal = lambda sig, handler: install(
        sig, overlapping(handler) if callable(handler) else handler
    )
    sys.exit(main())
    """
)


def take_controlling_terminal() -> None:
    """In the child, a session leader already (start_new_session): its stdin,
    the pty's slave side, becomes its controlling terminal, as a terminal
    emulator's shell's does."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A pseudo-terminal running `args` as its session's leader; we hold the master side."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        try:
            self.process = subprocess.Popen(
                args,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=ROOT,
                env=env,
                start_new_session=True,
                preexec_fn=take_controlling_terminal,
            )
        finally:
            os.close(slave)  # else the master never reads EOF
        self.output = b""

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def read_until(self, pattern: re.Pattern[bytes], timeout: float = 30) -> re.Match[bytes]:
        deadline = time.monotonic() + timeout
        while (found := pattern.search(self.output)) is None:
            left = deadline - time.monotonic()
            assert left > 0, f"no {pattern.pattern!r} in {timeout:g}s:\n{self.output!r}"
            if select.select([self.master], [], [], left)[0]:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # EIO: every process left the terminal
                    chunk = b""
                assert chunk, f"the terminal's programs all ended:\n{self.output!r}"
                self.output += chunk
        return found

    def hang_up(self) -> None:
        """Close the master side: the kernel hangs the terminal up."""
        if self.master >= 0:
            os.close(self.master)
            self.master = -1


class Left:
    """What a test started: all killed and removed after it, whatever happened."""

    def __init__(self) -> None:
        self.terminals: list[Terminal] = []
        self.pids: list[int] = []
        self.directories: list[str] = []

    def close(self) -> None:
        for terminal in self.terminals:
            terminal.hang_up()
            stop(terminal.process)
        kill_pids(self.pids)
        for directory in self.directories:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def left() -> Iterator[Left]:
    made = Left()
    yield made
    made.close()


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def serving(port: int, pid: int) -> bool:
    """The server answers PING on `port`, and is the one `worqr redis` started."""
    no_retry = Retry(NoBackoff(), retries=0)
    with (
        redis.Redis(port=port, socket_timeout=1, retry=no_retry) as client,
        contextlib.suppress(redis.RedisError),
    ):
        return bool(client.ping()) and client.info("server")["process_id"] == pid
    return False


NEEDS_BASH = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash to run the job in")


@pytest.mark.parametrize(
    "runs_it",
    [
        "the-terminal",  # its session leader: `xterm -e worqr redis`, `tmux new 'worqr redis'`
        pytest.param("a-shell", marks=NEEDS_BASH),  # a job of an interactive bash
        "the-terminal-second-sighup-mid-handling",  # OVERLAPPING
    ],
)
def test_worqr_redis_stops_its_server_when_its_terminal_closes(left: Left, runs_it: str) -> None:
    port = free_port()
    args = ["redis", "--port", str(port)]
    if runs_it == "a-shell":
        # No rc files, no history written at the hangup.
        shell = ["bash", "--norc", "--noprofile", "-i"]
        terminal = Terminal(shell, cli_env(HISTFILE="", PS1="$ ", TERM="dumb"))
        left.terminals.append(terminal)
        terminal.type(shlex.join([*WORQR, *args]))
    else:
        overlapping = runs_it == "the-terminal-second-sighup-mid-handling"
        command = [sys.executable, "-c", OVERLAPPING] if overlapping else WORQR
        terminal = Terminal([*command, *args], cli_env())
        left.terminals.append(terminal)
    started = terminal.read_until(STARTED)
    server, directory = int(started[1]), started[2].decode()
    worqr = parent_of(server)
    left.pids += [server, worqr]
    left.directories.append(directory)
    wait_until(lambda: serving(port, server), timeout=10, message="redis-server did not answer")

    terminal.hang_up()

    def left_behind() -> list[str]:
        return [
            what
            for what, there in [
                (f"redis-server pid {server}", pid_alive(server)),
                (directory, Path(directory).exists()),
                (f"worqr pid {worqr}", pid_alive(worqr)),
            ]
            if there
        ]

    deadline = time.monotonic() + 10
    while (still := left_behind()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not still, f"10s after the terminal closed, still there: {still}"
