"""`worqr worker` end to end: real worker processes under the supervisor, against
a real Redis, driven through the command line."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

import worqr
from tests.support import APPS
from tests.support.cli import cli_env, run_cli, start_cli
from tests.support.processes import children, kill_pids, pid_alive
from tests.support.waiting import wait_until
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis, free_port

FAST = ("--ttl", "1.0", "--heartbeat", "0.2")


class Mesh:
    """One `worqr worker` command (the supervisor, or a single process) and the
    Redis it works against; records what its handlers did."""

    def __init__(self, url: str, prefix: str, log: Path) -> None:
        self.url, self.prefix, self.log_path = url, prefix, log
        self.client = worqr.Worqr(url, prefix=prefix)
        self.redis = redis.Redis.from_url(url)
        self.process: subprocess.Popen[bytes] | None = None
        self.seen: set[int] = set()

    def start(self, *options: str, target: str = "cli_worker_app:worker") -> None:
        env = cli_env(PYTHONPATH=str(APPS), CLI_TEST_RECORD=self.prefix)
        args = ["worker", target, "--url", self.url, "--prefix", self.prefix, *options]
        with open(self.log_path, "ab") as log:
            self.process = start_cli(*args, env=env, stdout=log, stderr=log)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def workers(self) -> dict[str, int]:
        """Alive registered workers: id -> pid."""
        ids = self.client.get_workers()
        found = {}
        for worker, alive in zip(ids, self.client.workers_alive(ids), strict=True):
            pid = self.client.get_worker_info(worker).get("pid", "")
            if alive and pid.isdigit():
                found[worker] = int(pid)
                self.seen.add(int(pid))
        return found

    def wait_workers(self, count: int, timeout: float = 30) -> dict[str, int]:
        def ready() -> dict[str, int] | None:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"worqr worker exited early:\n{self.log()}")
            found = self.workers()
            return found if len(found) == count else None

        return wait_until(ready, timeout=timeout, message=f"{count} workers")

    def events(self) -> list[tuple[str, str, int]]:
        raw = self.redis.lrange(f"{self.prefix}:events", 0, -1)
        parts = [entry.decode().split(" ") for entry in raw]
        return [(event, name, int(pid)) for event, name, pid in parts]

    def names(self, event: str) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        for kind, name, pid in self.events():
            if kind == event:
                found.setdefault(name, []).append(pid)
        return found

    def holders(self) -> dict[str, int]:
        """Task name -> pid of the alive worker process holding it now."""
        keys = MeshKeys(self.prefix).queue("jobs")
        found: dict[str, int] = {}
        for worker, pid in self.workers().items():
            owned = self.redis.zrange(keys.owned(worker), 0, -1)
            tasks = self.redis.hmget(keys.processes, owned) if owned else []
            for task in tasks:
                if task is not None:
                    found[task.decode().partition(":")[2]] = pid
        return found

    def release(self) -> None:
        self.redis.set(f"{self.prefix}:release", 1)

    def enqueue(self, queue: str, *tasks: str) -> None:
        result = run_cli("enqueue", queue, *tasks, "--url", self.url, "--prefix", self.prefix)
        assert result.returncode == 0, result.stderr

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        assert self.process is not None
        self.process.send_signal(sig)
        return self.process.wait(timeout)

    def close(self) -> None:
        if self.process is not None:
            self.seen.update(children(self.process.pid))
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(10)
        kill_pids(sorted(self.seen))
        self.client.close()
        self.redis.close()


@pytest.fixture
def make_mesh(tmp_path: Path) -> Iterator[Callable[[str, str], Mesh]]:
    meshes: list[Mesh] = []

    def make(url: str, prefix: str) -> Mesh:
        mesh = Mesh(url, prefix, tmp_path / f"worker-{len(meshes)}.log")
        meshes.append(mesh)
        return mesh

    yield make
    for mesh in meshes:
        mesh.close()


@pytest.mark.slow
def test_sigterm_returns_in_flight_tasks_and_deregisters(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    mesh = make_mesh(redis_url, prefix)
    port = free_port()
    mesh.start("--processes", "3", "--grace", "0.3", "--metrics-port", str(port), *FAST)
    workers = mesh.wait_workers(3)
    assert sorted(workers.values()) == sorted(children(mesh.pid))  # real child processes

    mesh.enqueue("jobs", *(f"quick:{i}" for i in range(30)))
    wait_until(lambda: len(mesh.names("done")) == 30, timeout=20)

    def scraped() -> bytes:
        return bytes(urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read())

    # One endpoint sums the children (a handler records "done" just before its ack).
    wait_until(lambda: b'worqr_tasks_finished_total{queue="jobs"} 30.0' in scraped())

    mesh.enqueue("jobs", "hold:a", "hold:b", "hold:c")
    wait_until(lambda: {"a", "b", "c"} <= set(mesh.names("started")), timeout=20)
    assert mesh.stop(signal.SIGTERM) == 0
    # The grace period ran out: handlers saw the cancellation, tasks went back.
    assert set(mesh.names("cancelled")) == {"a", "b", "c"}
    assert mesh.client.count_tasks("jobs") == 3
    assert mesh.client.count_processes("jobs") == 0
    assert mesh.client.get_workers() == []
    assert not any(pid_alive(pid) for pid in workers.values())
    assert "Traceback" not in mesh.log()


@pytest.mark.slow
def test_sigkilled_child_is_restarted_and_peers_finish_its_tasks(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    mesh = make_mesh(redis_url, prefix)
    mesh.start("--processes", "3", "--concurrency", "2", *FAST)
    before = mesh.wait_workers(3)
    names = [f"t{i}" for i in range(6)]
    mesh.enqueue("jobs", *(f"hold:{name}" for name in names))
    wait_until(lambda: len(mesh.names("started")) == 6, timeout=20)
    # Who holds what, read from Redis once all six are held: a worker that lost
    # its lease under load (TTL 1 s) may have run a task before its holder did.
    holders = wait_until(lambda: mesh.holders() if len(mesh.holders()) == 6 else None)
    victim = holders["t0"]
    victims_tasks = {name for name, pid in holders.items() if pid == victim}
    assert len(victims_tasks) == 2  # two per process: the concurrency limit
    assert victim in mesh.names("started")["t0"]

    os.kill(victim, signal.SIGKILL)
    wait_until(
        lambda: victim not in mesh.workers().values() and len(mesh.workers()) == 3,
        timeout=20,
        message="the supervisor did not restart the killed child",
    )
    replacement = set(mesh.workers().values()) - set(before.values())
    assert len(replacement) == 1 and replacement <= set(children(mesh.pid))
    # Every task queued or held, none lost or doubled. Two reads, not one: a peer
    # taking the victim's returned tasks between them counts them twice for a
    # moment, so wait for the sum to settle.
    wait_until(
        lambda: mesh.client.count_tasks("jobs") + mesh.client.count_processes("jobs") == 6,
        message="the six tasks are queued or held",
    )

    mesh.release()
    wait_until(lambda: len(mesh.names("done")) == 6, timeout=20)
    done = mesh.names("done")
    for name in victims_tasks:
        assert victim not in done[name]  # finished by a peer or the replacement
    # A handler's finish is sent after its "done" entry, with the worker's next call.
    wait_until(
        lambda: mesh.client.count_tasks("jobs") == mesh.client.count_processes("jobs") == 0,
        message="every finish landed",
    )
    log = mesh.log()
    assert "exited with signal SIGKILL" in log and "restarted worker process" in log
    assert mesh.stop() == 0
    assert mesh.client.get_workers() == []


@pytest.mark.slow
def test_cancel_queued_running_and_persistent_tasks_from_the_cli(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    mesh = make_mesh(redis_url, prefix)
    # One process, one task at a time: "queued" cannot start while "running" runs.
    mesh.start("--concurrency", "1", *FAST, target="cli_worker_app:make_worker")
    mesh.wait_workers(1)
    mesh.enqueue("jobs", "hold:running", "hold:queued")
    mesh.enqueue("sessions", "s1")
    wait_until(lambda: {"running", "s1"} <= set(mesh.names("started")))
    assert mesh.client.count_tasks("jobs") == 1

    def cancel(queue: str, task: str) -> str:
        result = run_cli("cancel", queue, task, "--url", redis_url, "--prefix", prefix)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    assert cancel("jobs", "hold:queued") == "cancelled 1 copy on 'jobs'"
    assert cancel("jobs", "hold:running") == "cancelled 1 copy on 'jobs'"
    assert cancel("sessions", "s1") == "cancelled 1 copy on 'sessions'"
    wait_until(lambda: {"running", "s1"} <= set(mesh.names("cancelled")))
    wait_until(lambda: mesh.client.count_processes("jobs") == 0)
    wait_until(lambda: mesh.client.count_processes("sessions") == 0)

    # Capacity is free again, yet nothing comes back: cancelled means gone.
    mesh.enqueue("jobs", "quick:after")
    wait_until(lambda: "after" in mesh.names("done"))
    assert "queued" not in mesh.names("started")
    assert mesh.names("done").keys() == {"after"}
    assert mesh.client.count_tasks("jobs") == mesh.client.count_tasks("sessions") == 0
    assert mesh.stop(signal.SIGINT) == 0
    assert mesh.client.get_workers() == []


@pytest.mark.fault
@pytest.mark.slow
def test_workers_resume_after_a_redis_restart(
    make_mesh: Callable[[str, str], Mesh], fresh_redis: EmbeddedRedis, prefix: str
) -> None:
    mesh = make_mesh(fresh_redis.url, prefix)
    mesh.start("--processes", "2", *FAST)
    mesh.wait_workers(2)
    mesh.enqueue("jobs", *(f"quick:before{i}" for i in range(10)))
    wait_until(lambda: len(mesh.names("done")) == 10, timeout=20)

    fresh_redis.kill()
    wait_until(lambda: "Redis unreachable" in mesh.log(), timeout=20)
    fresh_redis.start()  # the append-only file brings the data back

    mesh.enqueue("jobs", *(f"quick:after{i}" for i in range(10)))
    wait_until(lambda: len(mesh.names("done")) == 20, timeout=30, message="work did not resume")
    mesh.wait_workers(2, timeout=30)  # both alive again (re-registered if their lease expired)
    assert mesh.stop() == 0
    assert mesh.client.get_workers() == []


def test_children_leave_when_the_supervisor_is_killed(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    mesh = make_mesh(redis_url, prefix)
    mesh.start("--processes", "2", "--grace", "0.2", *FAST)
    workers = mesh.wait_workers(2)
    mesh.enqueue("jobs", "hold:x")
    wait_until(lambda: "x" in mesh.names("started"))
    assert mesh.process is not None
    mesh.process.kill()
    mesh.process.wait(10)
    wait_until(lambda: not any(pid_alive(p) for p in workers.values()), timeout=20)
    assert mesh.client.get_workers() == []  # they deregistered: no failover wait
    assert mesh.client.count_tasks("jobs") == 1  # the held task went back


def test_a_closed_terminal_stops_a_single_worker_gracefully(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    """SIGHUP (the terminal went away) is a graceful stop, as SIGTERM: the held
    task goes back, the worker deregisters, exit 0."""
    mesh = make_mesh(redis_url, prefix)
    mesh.start("--grace", "0.2", *FAST)
    mesh.wait_workers(1)
    mesh.enqueue("jobs", "hold:x")
    wait_until(lambda: "x" in mesh.names("started"))
    assert mesh.stop(signal.SIGHUP) == 0
    assert mesh.client.count_tasks("jobs") == 1
    assert mesh.client.get_workers() == []


def test_command_line_overrides_the_workers_settings(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    mesh = make_mesh(redis_url, prefix)
    mesh.start("--concurrency", "3", "--grace", "0.2", *FAST)
    mesh.wait_workers(1)
    mesh.enqueue("jobs", *(f"hold:{i}" for i in range(5)))
    wait_until(lambda: len(mesh.names("started")) == 3)
    assert mesh.client.count_tasks("jobs") == 2  # three at a time, not the default eight
    assert mesh.stop() == 0


def test_timing_options_reach_every_process(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    mesh = make_mesh(redis_url, prefix)
    timing = ("--ttl", "1.5", "--heartbeat", "0.3", "--poll-interval", "0.7")
    mesh.start("--processes", "2", *timing, "--socket-timeout", "4")
    workers = mesh.wait_workers(2)
    records = wait_until(
        lambda: (
            len(raw := mesh.redis.lrange(f"{prefix}:settings", 0, -1)) == 2
            and [json.loads(r) for r in raw]
        )
    )
    assert sorted(r["pid"] for r in records) == sorted(workers.values())
    for record in records:
        assert (record["ttl"], record["heartbeat"]) == (1.5, 0.3)
        assert (record["poll_interval"], record["socket_timeout"]) == (0.7, 4.0)
    # The lease in Redis is the --ttl one (the default would be 3 s).
    for worker in workers:
        ttl = mesh.redis.pttl("{" + prefix + "}:alive:" + worker)
        assert 0 < ttl <= 1500, ttl
    assert mesh.stop() == 0


@pytest.mark.slow
def test_a_crash_loop_at_start_gives_up_in_one_line(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    """Default settings, every process dies as it registers: ten start-up
    failures are restarted (with backoff), the eleventh stops the supervisor
    with exit code 1 and one line saying why."""
    mesh = make_mesh(redis_url, prefix)
    mesh.start("--processes", "3", *FAST, target="cli_worker_app:crashing")
    assert mesh.process is not None
    assert mesh.process.wait(60) == 1
    log = mesh.log()
    assert log.count("restarting it in") == 10
    last = log.strip().splitlines()[-1]
    assert last.startswith("worqr worker: error: worker processes keep failing at start-up"), last
    assert "11 within 60 s (the limit is 10, --max-restarts)" in last
    assert "exited with status 1 before it was ready" in last


@pytest.mark.slow
def test_a_kill_storm_at_default_settings_never_stops_the_pool(
    make_mesh: Callable[[str, str], Mesh], redis_url: str, prefix: str
) -> None:
    """`worqr worker --processes 3` at default settings, a random child (ready
    or still starting) SIGKILLed every 300-600 ms: 30 kills in about 14 s,
    three times the start-up failure limit. Kills are never start-up failures:
    the pool keeps running, refills, and every task is done."""
    rng = random.Random(13)
    mesh = make_mesh(redis_url, prefix)
    mesh.start("--processes", "3", *FAST)
    mesh.wait_workers(3)
    names: list[str] = []
    killed = []
    began = time.monotonic()
    while len(killed) < 30:
        batch = [f"n{len(names) + i}" for i in range(5)]
        mesh.client.enqueue_many("jobs", [f"quick:{name}" for name in batch])
        names += batch
        time.sleep(rng.uniform(0.3, 0.6))
        victims = children(mesh.pid)
        if victims:
            killed.append(rng.choice(victims))
            os.kill(killed[-1], signal.SIGKILL)
        assert mesh.process is not None and mesh.process.poll() is None, mesh.log()
    assert time.monotonic() - began < 20
    # The last victim may die just now: the stop below must come after the
    # supervisor has reaped it, or it counts as a worker that died while stopping.
    wait_until(
        lambda: mesh.log().count("exited with signal SIGKILL") == len(set(killed)) == 30,
        timeout=10,
        message="the supervisor saw every kill",
    )
    wait_until(
        lambda: not set(mesh.wait_workers(3).values()) & set(killed),
        timeout=30,
        message="three live workers, none of them a victim",
    )
    wait_until(lambda: set(mesh.names("done")) >= set(names), timeout=30, message="every task done")
    assert mesh.stop() == 0, mesh.log()
    log = mesh.log()
    assert log.count("exited with signal SIGKILL") == 30
    assert "start-up failure" not in log and "giving up" not in log
