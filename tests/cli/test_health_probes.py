"""`worqr worker --health-port`: real worker processes (one, or a supervisor's
children) of `tests/support/apps/blocked_app.py`, probed over HTTP while they
work, block their event loop, lose Redis, are stopped with SIGSTOP, and shut
down."""

from __future__ import annotations

import os
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import worqr
from tests.support import APPS
from tests.support.cli import assert_one_line_error, cli_env, run_cli
from tests.support.job_mesh import Mesh as JobMesh
from tests.support.processes import children
from tests.support.waiting import wait_until
from worqr.embedded import EmbeddedRedis, free_port

pytestmark = pytest.mark.slow

OK = (200, "ok\n")


def probe(port: int, path: str, method: str = "GET") -> tuple[int, str]:
    """The status and body of one probe; (0, "") when nothing listens."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return 0, ""


def wait_probe(
    port: int, path: str, wanted: Callable[[int, str], bool], timeout: float = 10
) -> tuple[int, str]:
    """Probe until ``wanted(status, body)``; returns that answer."""

    def answered() -> tuple[int, str] | None:
        answer = probe(port, path)
        return answer if wanted(*answer) else None

    return wait_until(
        answered,
        timeout=timeout,
        interval=0.05,
        message=f"{path} on port {port}",
    )


class Mesh(JobMesh):
    """`worqr worker blocked_app:worker` and what its handlers recorded."""

    def __init__(self, url: str, prefix: str, log: Path) -> None:
        super().__init__(url, prefix, log, app="blocked_app:worker", record_env="BLOCKED_RECORD")

    def of(self, event: str, name: str) -> list[int]:
        """Pids of the ``event`` entries of task ``name``."""
        found = []
        for raw in self.redis.lrange(f"{self.prefix}:events", 0, -1):
            kind, task, pid = raw.decode().rsplit(" ", 2)
            if (kind, task) == (event, name):
                found.append(int(pid))
        return found


@pytest.fixture
def make_mesh(tmp_path: Path) -> Iterator[Callable[[str, str], Mesh]]:
    made: list[Mesh] = []

    def make(url: str, prefix: str) -> Mesh:
        mesh = Mesh(url, prefix, tmp_path / f"worker-{len(made)}.log")
        made.append(mesh)
        return mesh

    yield make
    for mesh in made:
        if mesh.process is not None:
            for pid in children(mesh.process.pid):  # SIGSTOPped ones too
                os.kill(pid, signal.SIGCONT)
        mesh.close()


def test_one_worker_is_ready_once_registered_and_not_while_it_shuts_down(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    mesh = make_mesh(redis_url, prefix)
    port = free_port()
    mesh.start(1, "--health-port", str(port), "--grace", "20")  # returns once registered
    seen: set[tuple[int, str]] = set()
    assert wait_probe(port, "/readyz", lambda *answer: seen.add(answer) or answer == OK) == OK
    assert seen <= {(0, ""), (503, "starting: not registered and listening yet\n"), OK}
    assert probe(port, "/livez") == OK
    assert probe(port, "/livez", "HEAD") == (200, "")
    assert probe(port, "/readyz", "HEAD") == (200, "")
    assert probe(port, "/livez?full=1") == OK
    status, body = probe(port, "/metrics")
    assert status == 404 and body.count("\n") == 1 and "/livez" in body

    mesh.client.enqueue("holds", "h1")
    wait_until(lambda: mesh.of("started", "h1"), message="the hold started")
    assert mesh.process is not None
    mesh.process.send_signal(signal.SIGTERM)  # the hold keeps the drain going (grace 20 s)
    assert wait_probe(port, "/readyz", lambda status, _: status == 503) == (
        503,
        "shutting down\n",
    )
    assert probe(port, "/livez") == OK  # draining is progress
    assert not mesh.of("returned", "h1")
    mesh.redis.set(f"{prefix}:release", 1)
    assert mesh.process.wait(20) == 0
    assert mesh.of("returned", "h1")
    assert probe(port, "/livez") == (0, "")  # the port closed with the worker


@pytest.mark.serial
def test_livez_is_503_while_a_handler_blocks_the_event_loop_and_200_after(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    mesh = make_mesh(redis_url, prefix)
    port = free_port()
    mesh.start(1, "--health-port", str(port), "--livez-after", "1")
    wait_probe(port, "/readyz", lambda status, _: status == 200)
    assert probe(port, "/livez") == OK

    mesh.client.enqueue("blocking", "5:b1:payload")  # time.sleep(5) on the loop
    wait_until(lambda: mesh.of("started", "b1"), message="the blocking handler started")
    began = time.monotonic()
    status, body = wait_probe(port, "/livez", lambda status, _: status != 200)
    assert time.monotonic() - began < 1 + 1.5  # --livez-after, a watch tick and a probe
    assert status == 503 and body.count("\n") == 1 and body.endswith("\n")
    assert body.startswith("the event loop has made no progress for ")
    assert "blocked by the handler of queue 'blocking' (blocked_app.block)" in body
    assert "payload" not in body
    assert probe(port, "/readyz") == OK  # ready: only slow

    wait_until(lambda: mesh.of("returned", "b1"), timeout=15, message="the block ended")
    assert wait_probe(port, "/livez", lambda status, _: status == 200, timeout=5) == OK


@pytest.mark.fault
@pytest.mark.serial
def test_livez_is_503_when_no_heartbeat_lands_within_the_ttl(
    make_mesh: Callable[[str, str], Mesh],
    make_redis: Callable[..., EmbeddedRedis],
    prefix: str,
) -> None:
    server = make_redis()
    mesh = make_mesh(server.url, prefix)
    port = free_port()
    mesh.start(1, "--health-port", str(port), "--livez-after", "4")  # --ttl 1
    wait_probe(port, "/readyz", lambda status, _: status == 200)
    assert probe(port, "/livez") == OK

    server.pause()  # SIGSTOP: every heartbeat hangs
    try:
        paused = time.monotonic()
        status, body = wait_probe(port, "/livez", lambda status, _: status != 200)
        assert time.monotonic() - paused < 1 + 1.5  # the ttl, a tick and a probe
    finally:
        server.resume()
    assert status == 503
    assert body.startswith("no heartbeat has landed for ") and body.endswith(" s (ttl 1 s)\n")
    # Redis back: the worker re-registers (its lease expired meanwhile) and beats again.
    assert wait_probe(port, "/livez", lambda status, _: status == 200, timeout=15) == OK


@pytest.mark.serial
def test_the_supervisor_answers_for_every_child_and_names_a_stopped_one(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    mesh = make_mesh(redis_url, prefix)
    port = free_port()
    mesh.start(2, "--health-port", str(port), "--livez-after", "1")
    assert wait_probe(port, "/readyz", lambda status, _: status == 200) == OK
    assert probe(port, "/livez") == OK
    assert mesh.process is not None
    victim, other = children(mesh.process.pid)

    os.kill(victim, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        status, body = wait_probe(port, "/livez", lambda status, _: status != 200)
        assert time.monotonic() - stopped < 1 + 1.5
    finally:
        os.kill(victim, signal.SIGCONT)
    assert status == 503 and body.count("\n") == 1
    assert f"(pid {victim}) has not reported for " in body and body.startswith("worker process ")
    assert str(other) not in body
    assert wait_probe(port, "/livez", lambda status, _: status == 200) == OK

    # A blocked loop in a child: the child says so, and the supervisor names it.
    mesh.client.enqueue("blocking", "4:b2:x")
    wait_until(lambda: mesh.of("started", "b2"), message="the blocking handler started")
    (blocked,) = mesh.of("started", "b2")
    status, body = wait_probe(port, "/livez", lambda status, _: status != 200)
    assert status == 503
    assert f"(pid {blocked}): the event loop has made no progress for " in body
    wait_until(lambda: mesh.of("returned", "b2"), timeout=15, message="the block ended")
    assert wait_probe(port, "/livez", lambda status, _: status == 200) == OK


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--health-port", "8", "--livez-after", "5", "--max-blocked", "5"], "--max-blocked 5"),
        (["--health-port", "8", "--max-blocked", "3"], "livez_after (5; --livez-after sets it)"),
        (["--livez-after", "1"], "--livez-after needs --health-port"),
        (["--health-host", "0.0.0.0"], "--health-host needs --health-port"),
        (["--health-port", "0"], "--health-port"),
        (["--health-port", "65536"], "not a TCP port"),
        (["--health-port", "8", "--livez-after", "nan"], "--livez-after"),
        (["--health-port", "8", "--livez-after", "0"], "--livez-after"),
        (
            ["--health-port", "8", "--processes", "2", "--livez-after", "9", "--max-blocked", "2"],
            "",
        ),
    ],
    ids=[
        "not-below-max-blocked",
        "default-not-below-max-blocked",
        "livez-after-alone",
        "host-alone",
        "port-0",
        "port-too-big",
        "nan",
        "zero",
        "supervisor",
    ],
)
def test_usage_errors_exit_2_in_one_line_and_start_nothing(
    redis_url: str, prefix: str, options: list[str], said: str
) -> None:
    done = run_cli(
        "worker",
        "blocked_app:worker",
        "--url",
        redis_url,
        "--prefix",
        prefix,
        *options,
        env=cli_env(PYTHONPATH=str(APPS)),
    )
    assert_one_line_error(done, 2, said)
    assert done.stdout == ""
    assert_nothing_registered(redis_url, prefix)
    if "--max-blocked" in options:
        assert "must be shorter than" in done.stderr


@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_busy_port_is_refused_at_start(redis_url: str, prefix: str, processes: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli(
            "worker",
            "blocked_app:worker",
            "--url",
            redis_url,
            "--prefix",
            prefix,
            "--processes",
            processes,
            "--health-port",
            str(port),
            env=cli_env(PYTHONPATH=str(APPS)),
            timeout=30,
        )
    assert done.returncode == 1, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last == f"worqr worker: error: cannot serve health probes on 127.0.0.1:{port}: " + (
        "Address already in use"
    )
    assert "Traceback" not in done.stderr
    assert_nothing_registered(redis_url, prefix)


def assert_nothing_registered(url: str, prefix: str) -> None:
    with worqr.Worqr(url, prefix=prefix) as client:
        assert client.get_workers() == []
