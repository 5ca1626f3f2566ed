"""Real `worqr worker` processes of a test app, for the job layer's process tests."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

import worqr
from tests.support import APPS
from tests.support.cli import cli_env, start_cli
from tests.support.processes import kill_pids
from tests.support.waiting import wait_until

TIMING = ("--ttl", "1.0", "--heartbeat", "0.2")


class Mesh:
    """`worqr worker APP --processes N` of a test app (tests/support/apps) and
    what it recorded: the app pushes ``"<event> <job id> <pid> <attempt>"`` on the
    list ``<prefix>:events`` ($JOB_RECORD is the prefix)."""

    def __init__(
        self, url: str, prefix: str, log: Path, *, app: str, record_env: str = "JOB_RECORD"
    ) -> None:
        self.url, self.prefix, self.log_path, self.app = url, prefix, log, app
        self.record_env = record_env
        self.redis = redis.Redis.from_url(url)
        self.client = worqr.Worqr(url, prefix=prefix)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, processes: int = 2, *options: str) -> None:
        env = cli_env(PYTHONPATH=str(APPS), **{self.record_env: self.prefix})
        args = ["worker", self.app, "--url", self.url, "--prefix", self.prefix]
        args += ["--processes", str(processes), *TIMING, *options]
        with open(self.log_path, "ab") as log:
            self.process = start_cli(*args, env=env, stdout=log, stderr=log)
        wait_until(lambda: len(self.pids()) == processes, timeout=30, message="the workers")

    def pids(self) -> list[int]:
        ids = self.client.get_workers()
        alive = self.client.workers_alive(ids)
        infos = [self.client.get_worker_info(w) for w, up in zip(ids, alive, strict=True) if up]
        return [int(info["pid"]) for info in infos if info.get("pid", "").isdigit()]

    def events(self, event: str, job_id: str) -> list[tuple[int, int]]:
        """(pid, attempt) of each ``event`` of the job, in order."""
        found = []
        for raw in self.redis.lrange(f"{self.prefix}:events", 0, -1):
            kind, id, pid, attempt = raw.decode().split(" ")
            if kind == event and id == job_id:
                found.append((int(pid), int(attempt)))
        return found

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                kill_pids([self.process.pid])
                self.process.wait(timeout=20)  # reaped: no zombie warns in a later test
        self.client.close()
        self.redis.close()


def mesh_fixture(app: str) -> Callable[..., Iterator[Mesh]]:
    """A ``mesh`` fixture of the test app ``app``, closed after the test:
    ``mesh = mesh_fixture("limit_app:worker")`` in a test module."""

    @pytest.fixture
    def mesh(redis_url: str, prefix: str, tmp_path: Path) -> Iterator[Mesh]:
        made = Mesh(redis_url, prefix, tmp_path / "worker.log", app=app)
        try:
            yield made
        finally:
            made.close()

    return mesh
