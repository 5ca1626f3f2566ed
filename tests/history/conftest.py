"""A real `worqr worker history_app:worker` whose handlers log each run they
made and the time they measured, for the history's tests to compare with."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import worqr
from tests.http.conftest import api  # noqa: F401  (the HTTP tests' fixture)
from tests.support import APPS
from tests.support.cli import cli_env, start_cli
from tests.support.processes import stop
from tests.support.waiting import wait_until


@dataclass
class HistoryMesh:
    url: str
    prefix: str
    client: worqr.Worqr
    runs: Path  # one line per run: "<outcome> <seconds the handler measured>"

    def measured(self) -> list[tuple[str, float]]:
        lines = self.runs.read_text().splitlines() if self.runs.exists() else []
        return [(outcome, float(seconds)) for outcome, seconds in map(str.split, lines)]


@pytest.fixture
def history_mesh(redis_url: str, tmp_path: Path) -> Iterator[HistoryMesh]:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    runs, log = tmp_path / "runs.txt", tmp_path / "worker.log"
    args = ["worker", "history_app:worker", "--url", redis_url, "--prefix", prefix]
    timing = ["--ttl", "1", "--heartbeat", "0.2", "--grace", "0.5"]
    env = cli_env(PYTHONPATH=str(APPS), HISTORY_RUNS=str(runs))
    with open(log, "ab") as out:
        process = start_cli(*args, *timing, env=env, stdout=out, stderr=out)
    client = worqr.Worqr(redis_url, prefix=prefix)
    try:

        def working() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"the worker exited:\n{log.read_text()}")
            return any("timed" in client.get_working_queues(w) for w in client.get_workers())

        wait_until(working, timeout=30, message="the worker did not join its queue")
        yield HistoryMesh(redis_url, prefix, client, runs)
    finally:
        stop(process)  # its mesh's prefix is the test's own: no need to leave gracefully
        client.close()
