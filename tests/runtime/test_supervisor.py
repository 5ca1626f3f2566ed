"""The multi-process parent, with plain Python children (no Redis): the restart
policy (killed or healthy children always come back; start-up failures, a
crash loop, end in giving up), backoff, signal forwarding, and children
outliving it."""

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
# reports ready, and exits after the Nth stop signal (MODE=N). MODE=exit:<code>
# exits at once (before it is ready), ready-exit:<code> right after reporting
# ready, late-exit:<code> 0.4 s after (unless stopped first), unready:N never
# reports ready (it takes forever to start), importing neither reports ready
# nor handles signals (a stop signal kills it).
CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading
    from worqr._cli.supervised import ready_fd, report_ready, watch_parent
    directory, mode = sys.argv[1], sys.argv[2]
    if mode.startswith("exit:"):
        sys.exit(int(mode[5:]))
    if mode.startswith("ready-exit:"):
        report_ready(ready_fd())
        sys.exit(int(mode[11:]))
    if mode == "importing":  # still starting: no signal handler yet, never ready
        open(os.path.join(directory, str(os.getpid())), "w").close()
        threading.Event().wait()
    ready = not mode.startswith("unready:")
    late = int(mode[10:]) if mode.startswith("late-exit:") else None
    stop_after = 1 if late is not None else int(mode.rpartition(":")[2])
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
    if ready:
        report_ready(ready_fd())
    if late is not None and not done.wait(0.4):
        sys.exit(late)
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
    policy = RestartPolicy(backoff=0.05, max_backoff=0.2, stable_after=float(sys.argv[6]),
                           max_start_failures=int(sys.argv[5]), failure_window=60)
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

    def start(
        self, processes: int = 3, mode: str = "1", limit: int = 10, stable_after: float = 5
    ) -> None:
        self.parent = subprocess.Popen(
            [
                sys.executable,
                str(self.tmp / "parent.py"),
                str(self.tmp / "child.py"),
                str(self.dir),
                str(processes),
                mode,
                str(limit),
                str(stable_after),
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
def test_a_crash_loop_at_start_gives_up(family: Family) -> None:
    """Children that exit on their own before they are ready: start-up failures.
    The limit's worth are restarted (with a backoff that doubles per slot), the
    next stops everything with exit 1 and one line saying why."""
    family.start(processes=2, mode="exit:1", limit=4)
    assert family.parent is not None
    assert family.parent.wait(30) == 1
    log = family.log()
    assert log.count("restarting it in") == 4
    assert log.count("before it was ready") == 5
    [reason] = [line for line in log.splitlines() if "giving up" in line]
    assert "keep failing at start-up: 5 within 60 s (the limit is 4" in reason
    assert "exited with status 1 before it was ready" in reason


@pytest.mark.slow
def test_a_child_that_dies_right_after_it_is_ready_is_a_start_up_failure(
    family: Family,
) -> None:
    """ "Soon after": ready, then an exit of its own within stable_after (a
    handler that kills its process at once) still counts."""
    family.start(processes=2, mode="ready-exit:3", limit=2)
    assert family.parent is not None
    assert family.parent.wait(30) == 1
    log = family.log()
    assert "soon after it was ready" in log and "giving up" in log


@pytest.mark.slow
def test_killed_children_are_always_restarted(family: Family) -> None:
    """SIGKILLs of ready children, three times the start-up failure limit:
    none counts, each is replaced after the base backoff, and the pool stops
    cleanly afterwards."""
    family.start(processes=2, limit=2)
    assert family.parent is not None
    killed = []
    for _ in range(6):
        victim = wait_until(lambda: len(family.alive()) == 2 and family.alive()[0], timeout=20)
        os.kill(victim, signal.SIGKILL)
        killed.append(victim)
        wait_until(lambda v=victim: v not in family.alive(), timeout=10)  # type: ignore[misc]
    wait_until(lambda: len(family.alive()) == 2, timeout=20, message="the pool shrank")
    assert family.parent.poll() is None, family.log()
    family.parent.send_signal(signal.SIGTERM)
    assert family.parent.wait(20) == 0
    log = family.log()
    assert log.count("exited with signal SIGKILL") == 6 and "giving up" not in log
    assert "start-up failure" not in log
    assert set(killed) <= set(family.exits())


@pytest.mark.slow
@pytest.mark.serial
def test_a_child_that_ran_healthily_is_restarted_whatever_its_exit(family: Family) -> None:
    """Ready for longer than stable_after, then an exit with an error of its own
    (a crash in a handler an hour in): restarted, never counted, even with
    --max-restarts 0."""
    family.start(processes=1, mode="late-exit:1", limit=0, stable_after=0.2)
    wait_until(lambda: len(family.pids()) >= 4, timeout=20, message="not restarted")
    assert family.parent is not None
    assert family.parent.poll() is None, family.log()
    family.parent.send_signal(signal.SIGTERM)
    assert family.parent.wait(20) in (0, 1)  # a child may be exiting with 1 right then
    log = family.log()
    assert "exited with status 1 after" in log and "giving up" not in log


@pytest.mark.slow
def test_children_killed_while_starting_are_restarted_too(family: Family) -> None:
    """A kill is an outside decision even before the child is ready (it could
    be a random victim of a kill storm that was still starting): not counted."""
    family.start(processes=2, mode="unready:1", limit=0)
    assert family.parent is not None
    for _ in range(3):
        victim = wait_until(lambda: len(family.alive()) == 2 and family.alive()[0], timeout=20)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda v=victim: v not in family.alive(), timeout=10)  # type: ignore[misc]
    wait_until(lambda: len(family.alive()) == 2, timeout=20, message="the pool shrank")
    assert family.parent.poll() is None, family.log()
    family.parent.send_signal(signal.SIGTERM)
    assert family.parent.wait(20) == 0


@pytest.mark.parametrize(
    ("field", "value", "kind", "error"),
    [
        ("max_start_failures", -1, ValueError, "max_start_failures must be an int from 0"),
        ("max_start_failures", 2.5, TypeError, "max_start_failures must be an int"),
        ("max_start_failures", True, TypeError, "max_start_failures must be an int"),
        ("failure_window", 0, ValueError, "failure_window must be a number of seconds > 0"),
        ("failure_window", float("inf"), ValueError, "failure_window must be a number of sec"),
        ("backoff", -0.1, ValueError, "backoff must be a number of seconds > 0"),
        ("backoff", 1e10, ValueError, "backoff must be a number of seconds > 0"),
    ],
)
def test_restart_policy_refuses_bad_values(
    field: str, value: object, kind: type[Exception], error: str
) -> None:
    from worqr._cli.supervisor import RestartPolicy

    with pytest.raises(kind, match=error):
        RestartPolicy(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("processes", "kind"), [(0, ValueError), (-1, ValueError), (True, TypeError), (2.0, TypeError)]
)
def test_the_supervisor_refuses_a_bad_number_of_processes(
    processes: object, kind: type[Exception]
) -> None:
    from worqr._cli.supervisor import Supervisor

    with pytest.raises(kind, match="processes must be an int"):
        Supervisor(lambda index: ["true"], processes)  # type: ignore[arg-type]


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


def test_a_child_stopped_while_it_still_starts_is_a_clean_stop(family: Family) -> None:
    """SIGTERM reaches a child before it could install its handlers: it dies of
    the signal, but it held no work yet, so the supervisor still exits 0."""
    family.start(processes=2, mode="importing")
    pids = wait_until(lambda: len(family.alive()) == 2 and family.alive(), timeout=20)
    assert family.parent is not None
    family.parent.send_signal(signal.SIGTERM)
    assert family.parent.wait(20) == 0, family.log()
    assert not any(pid_alive(pid) for pid in pids)


@pytest.mark.parametrize(
    "signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name
)
@pytest.mark.serial
def test_a_closed_terminal_stops_the_children_gracefully(
    family: Family, signum: signal.Signals
) -> None:
    """SIGHUP (the terminal went away) stops the pool as SIGTERM does: each child
    gets SIGTERM once (SIGINT stays SIGINT), and the supervisor exits 0."""
    family.start(processes=2)
    pids = wait_until(lambda: len(family.alive()) == 2 and family.alive(), timeout=20)
    assert family.parent is not None
    family.parent.send_signal(signum)
    assert family.parent.wait(20) == 0, family.log()
    forwarded = signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM
    assert all(family.signals(pid) == [forwarded] for pid in pids)
    assert family.alive() == []


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
