"""Nothing the command line starts outlives it: `worqr redis`'s server and
`worqr demo`'s server and mesh stop with their parent on SIGHUP (a closed
terminal), SIGTERM and SIGINT, and do not outlive a SIGKILLed parent (the
kernel's parent-death signal, `worqr._parent_death`). The supervisor's
children are covered in `runtime/test_supervisor.py`."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.cli import start_cli
from tests.support.processes import children, kill_pids, pid_alive, stop
from tests.support.server_versions import server_binary
from tests.support.waiting import wait_until
from worqr._parent_death import die_with_parent
from worqr.embedded import EmbeddedRedis, free_port

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's"
)

STARTED = re.compile(r"redis-server pid (\d+), data in (\S+);")


class Started:
    """Processes a test started, with every descendant seen: all killed after."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []
        self.pids: set[int] = set()
        self.directories: list[str] = []

    def cli(self, *args: str) -> subprocess.Popen[bytes]:
        process = start_cli(*args)
        self.processes.append(process)
        return process

    def close(self) -> None:
        for process in self.processes:
            stop(process)
        kill_pids(sorted(self.pids))
        for directory in self.directories:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def started() -> Iterator[Started]:
    made = Started()
    yield made
    made.close()


def redis_command(started: Started) -> tuple[subprocess.Popen[bytes], int, str]:
    """`worqr redis` running: the command, its server's pid and data directory."""
    process = started.cli("redis", "--port", str(free_port()))
    assert process.stderr is not None
    line = process.stderr.readline().decode()
    found = STARTED.search(line)
    assert found, line
    pid, directory = int(found[1]), found[2]
    started.pids.add(pid)
    started.directories.append(directory)
    return process, pid, directory


@pytest.mark.parametrize(
    "signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name
)
def test_worqr_redis_stops_its_server_on_a_stop_signal(
    started: Started, signum: signal.Signals
) -> None:
    process, server, directory = redis_command(started)
    process.send_signal(signum)
    assert process.wait(10) == 0
    assert not pid_alive(server)
    assert not Path(directory).exists()  # its data went with it


def test_worqr_redis_killed_leaves_no_server_running(started: Started) -> None:
    process, server, _ = redis_command(started)
    process.kill()
    process.wait(10)
    wait_until(lambda: not pid_alive(server), message="redis-server outlived a SIGKILLed parent")


def test_an_embedded_redis_of_another_thread_outlives_the_thread() -> None:
    """The parent-death signal fires when the thread that forked the child ends:
    a server started on another thread does not ask for it (and so survives
    that thread)."""
    servers: list[EmbeddedRedis] = []
    thread = threading.Thread(target=lambda: servers.append(EmbeddedRedis().start()))
    thread.start()
    thread.join()
    [server] = servers
    try:
        assert server.pid is not None and pid_alive(server.pid)
        assert die_with_parent() is not None  # the main thread asks for it
    finally:
        server.close()


# A parent that starts an EmbeddedRedis on its main thread, says its pid, waits.
PARENT = textwrap.dedent(
    """
    import sys, threading
    from worqr.embedded import EmbeddedRedis
    server = EmbeddedRedis(binary=sys.argv[1]).start()
    print(server.pid, server.directory, flush=True)
    threading.Event().wait()
    """
)


def test_an_embedded_redis_stops_when_its_process_is_killed(started: Started) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, server_binary()], stdout=subprocess.PIPE, cwd=ROOT
    )
    started.processes.append(parent)
    assert parent.stdout is not None
    pid, directory = parent.stdout.readline().decode().split()
    started.pids.add(int(pid))
    started.directories.append(directory)
    parent.kill()
    parent.wait(10)
    wait_until(lambda: not pid_alive(int(pid)), message="redis-server outlived its process")


def demo_family(started: Started, process: subprocess.Popen[bytes]) -> set[int]:
    """Once `worqr demo` has its mesh up: the pids of its redis-server, its
    mesh's supervisor and the supervisor's worker processes."""
    assert process.stdout is not None
    lines = []
    while not any(line.startswith("  mesh") for line in lines):
        line = process.stdout.readline().decode()
        assert line, "worqr demo ended early:\n" + "".join(lines)
        lines.append(line)
    [server] = [
        int(m[1]) for line in lines if (m := re.search(r"redis-server \(pid (\d+)\)", line))
    ]
    [supervisor] = [pid for pid in children(process.pid) if pid != server]
    family = {server, supervisor, *children(supervisor)}
    started.pids.update(family)
    assert len(family) == 2 + 2  # --processes 2
    return family


@pytest.mark.slow
@pytest.mark.parametrize(
    "signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name
)
def test_worqr_demo_takes_its_redis_and_mesh_along(
    started: Started, signum: signal.Signals
) -> None:
    """A closed terminal and SIGTERM stop the demo as Ctrl-C does; a SIGKILLed
    demo leaves nothing behind either: its server and mesh get the parent-death
    signal, and the mesh's children follow their supervisor."""
    process = started.cli("demo", "--processes", "2", "--tasks", "20000")
    family = demo_family(started, process)
    process.send_signal(signum)
    process.wait(60)
    wait_until(
        lambda: not any(pid_alive(pid) for pid in family),
        timeout=30,
        message="the demo's server or mesh outlived it",
    )


def test_a_stop_signal_the_demo_swallowed_is_raised_at_its_next_wait() -> None:
    """A SIGHUP whose KeyboardInterrupt lands in a ``__del__`` is ignored by
    Python; the demo remembers it and stops at its next wait or batch (it ran
    on to the end, 24 s, once in 5 stops mid-enqueue)."""
    from worqr._demo.run import StopSignals, wait_for

    try:
        with pytest.raises(KeyboardInterrupt):
            StopSignals.on_signal(signal.SIGHUP, None)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):  # swallowed above: raised again here
            wait_for("something that never happens", lambda: None, timeout=30)
        assert time.monotonic() - started < 5
    finally:
        StopSignals.asked = False
