"""The multi-process parent, with plain Python children (no Redis): restarts,
backoff and restart storms, signal forwarding, and children outliving it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.processes import kill_pids, pid_alive, stop
from tests.support.waiting import wait_until

# A child: writes its pid to DIR/<pid>, appends each signal it gets to DIR/<pid>.signals,
# and exits after the Nth stop signal (STOP_AFTER) or at once (MODE=exit:<code>).
CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading
    from worqr._cli.supervisor import watch_parent
    directory, mode = sys.argv[1], sys.argv[2]
    if mode.startswith("exit:"):
        sys.exit(int(mode[5:]))
    stop_after = int(mode)
    received = []
    done = threading.Event()
    def on_signal(signum, frame):
        received.append(signum)
        with open(os.path.join(directory, f"{os.getpid()}.signals"), "a") as f:
            f.write(f"{signum}\\n")
        if len(received) >= stop_after:
            done.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    watch_parent(lambda: (open(os.path.join(directory, f"{os.getpid()}.orphan"), "w").close(),
                          done.set()))
    open(os.path.join(directory, str(os.getpid())), "w").close()
    while not done.wait(0.05):
        pass
    """
)

# The parent under test: a Supervisor of `processes` children running CHILD.
PARENT = textwrap.dedent(
    """
    import logging, sys
    from worqr._cli.supervisor import RestartPolicy, Supervisor
    logging.basicConfig(level=logging.INFO)
    child, directory, processes, mode = sys.argv[1:5]
    policy = RestartPolicy(backoff=0.05, max_backoff=0.2, stable_after=5,
                           storm_restarts=int(sys.argv[5]), storm_window=60)
    command = lambda i: [sys.executable, child, directory, mode]
    def on_exit(pid):
        with open(f"{directory}/exits", "a") as f:
            f.write(f"{pid}\\n")
    sys.exit(Supervisor(command, int(processes), policy=policy, on_exit=on_exit).run())
    """
)


class Family:
    """A supervisor subprocess and the children it reports through pid files."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path / "pids"
        self.dir.mkdir()
        (tmp_path / "child.py").write_text(CHILD)
        (tmp_path / "parent.py").write_text(PARENT)
        self.tmp = tmp_path
        self.parent: subprocess.Popen[bytes] | None = None

    def start(self, processes: int = 3, mode: str = "1", storm: int = 10) -> None:
        self.parent = subprocess.Popen(
            [
                sys.executable,
                str(self.tmp / "parent.py"),
                str(self.tmp / "child.py"),
                str(self.dir),
                str(processes),
                mode,
                str(storm),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
        )

    def exits(self) -> list[int]:
        path = self.dir / "exits"
        return sorted(int(p) for p in path.read_text().split()) if path.exists() else []

    def pids(self) -> list[int]:
        return sorted(int(p.name) for p in self.dir.iterdir() if p.name.isdigit())

    def alive(self) -> list[int]:
        return [pid for pid in self.pids() if pid_alive(pid)]

    def signals(self, pid: int) -> list[int]:
        path = self.dir / f"{pid}.signals"
        return [int(s) for s in path.read_text().split()] if path.exists() else []

    def log(self) -> str:
        assert self.parent is not None and self.parent.stderr is not None
        return self.parent.stderr.read().decode()

    def cleanup(self) -> None:
        if self.parent is not None:
            stop(self.parent)
        kill_pids(self.pids())


@pytest.fixture
def family(tmp_path: Path) -> Iterator[Family]:
    fam = Family(tmp_path)
    yield fam
    fam.cleanup()


def test_restarts_a_killed_child_and_stops_cleanly(family: Family) -> None:
    family.start(processes=3)
    first = wait_until(lambda: len(family.alive()) == 3 and family.alive(), timeout=20)
    os.kill(first[0], signal.SIGKILL)
    wait_until(lambda: len(family.pids()) == 4, timeout=10, message="no replacement child")
    wait_until(lambda: len(family.alive()) == 3, timeout=10)
    assert first[0] not in family.alive()
    assert family.exits() == [first[0]]  # the exit hook saw the death

    assert family.parent is not None
    family.parent.send_signal(signal.SIGTERM)
    assert family.parent.wait(20) == 0, family.log()
    assert family.alive() == []
    assert family.exits() == family.pids()
    for pid in family.pids():
        if pid != first[0]:
            assert family.signals(pid) == [signal.SIGTERM]  # forwarded once each
    log = family.log()
    assert "exited with signal SIGKILL" in log and "restarting it in" in log


def test_second_signal_is_forwarded_and_third_kills(family: Family) -> None:
    family.start(processes=2, mode="99")  # children ignore stop signals
    pids = wait_until(lambda: len(family.alive()) == 2 and family.alive(), timeout=20)
    assert family.parent is not None
    family.parent.send_signal(signal.SIGINT)
    wait_until(lambda: all(family.signals(p) == [signal.SIGINT] for p in pids))
    family.parent.send_signal(signal.SIGTERM)
    wait_until(lambda: all(family.signals(p) == [signal.SIGINT, signal.SIGTERM] for p in pids))
    family.parent.send_signal(signal.SIGTERM)
    assert family.parent.wait(20) == 1  # the children did not stop cleanly
    assert family.alive() == []
    assert "killing 2 worker processes" in family.log()


@pytest.mark.slow
def test_restart_storm_gives_up(family: Family) -> None:
    family.start(processes=2, mode="exit:1", storm=4)
    assert family.parent is not None
    assert family.parent.wait(30) == 1
    log = family.log()
    assert log.count("restarting it in") == 4
    assert "giving up" in log


def test_max_restarts_zero_never_restarts(family: Family) -> None:
    family.start(processes=2, mode="exit:1", storm=0)
    assert family.parent is not None
    assert family.parent.wait(30) == 1
    log = family.log()
    assert "restarting it in" not in log and "giving up" in log


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("storm_restarts", -1, "storm_restarts must be an integer >= 0"),
        ("storm_restarts", 2.5, "storm_restarts must be an integer >= 0"),
        ("storm_restarts", True, "storm_restarts must be an integer >= 0"),
        ("storm_window", 0, "storm_window must be a positive finite number"),
        ("storm_window", float("inf"), "storm_window must be a positive finite number"),
        ("backoff", -0.1, "backoff must be a positive finite number"),
    ],
)
def test_restart_policy_refuses_bad_values(field: str, value: object, error: str) -> None:
    from worqr._cli.supervisor import RestartPolicy

    with pytest.raises(ValueError, match=error):
        RestartPolicy(**{field: value})  # type: ignore[arg-type]


def test_usage_error_in_a_child_is_not_restarted(family: Family) -> None:
    family.start(processes=2, mode="exit:2")
    assert family.parent is not None
    assert family.parent.wait(30) == 2
    log = family.log()
    assert "usage error" in log and "restarting it in" not in log


def test_children_stop_when_the_supervisor_is_killed(family: Family) -> None:
    family.start(processes=2)
    pids = wait_until(lambda: len(family.alive()) == 2 and family.alive(), timeout=20)
    assert family.parent is not None
    family.parent.kill()
    family.parent.wait(10)
    wait_until(lambda: family.alive() == [], timeout=10, message="orphans kept running")
    assert all((family.dir / f"{pid}.orphan").exists() for pid in pids)


def test_children_do_not_get_the_terminals_ctrl_c_directly(family: Family) -> None:
    # Each child has its own process group: a Ctrl-C aimed at the supervisor's
    # group reaches the children once, through the supervisor.
    family.start(processes=2, mode="1")
    pids = wait_until(lambda: len(family.alive()) == 2 and family.alive(), timeout=20)
    assert family.parent is not None
    for pid in pids:
        assert os.getpgid(pid) != os.getpgid(family.parent.pid)
    family.parent.send_signal(signal.SIGINT)
    assert family.parent.wait(20) == 0
    assert all(family.signals(pid) == [signal.SIGINT] for pid in pids)
