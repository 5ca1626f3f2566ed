"""Fixtures of the command-line tests: a real `worqr worker` running the job
handlers of `tests/support/apps/job_app.py`, shared by the tests that need jobs
to run (each uses ids of its own)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import worqr
from tests.support import APPS
from tests.support.cli import cli_env, run_cli, start_cli
from tests.support.processes import stop
from tests.support.waiting import wait_until


@dataclass
class JobMesh:
    """A mesh whose `worqr worker job_app:worker` runs the queues "work" and "raw"."""

    url: str
    prefix: str
    client: worqr.Worqr

    def run(self, *args: str, input: bytes | None = None) -> subprocess.CompletedProcess[str]:
        """`worqr ARGS... --url URL --prefix PREFIX` against this mesh."""
        return run_cli(*args, "--url", self.url, "--prefix", self.prefix, input=input)

    @staticmethod
    def new_id() -> str:
        return f"job-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def job_mesh(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JobMesh]:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    log = tmp_path_factory.mktemp("job-worker") / "worker.log"
    args = ["worker", "job_app:worker", "--url", redis_url, "--prefix", prefix]
    timing = ["--ttl", "1", "--heartbeat", "0.2", "--poll-interval", "0.5", "--grace", "0.5"]
    with open(log, "ab") as out:
        process = start_cli(
            *args, *timing, env=cli_env(PYTHONPATH=str(APPS)), stdout=out, stderr=out
        )
    client = worqr.Worqr(redis_url, prefix=prefix)
    try:

        def working() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"the job worker exited:\n{log.read_text()}")
            return any(
                set(client.get_working_queues(worker)) == {"raw", "work"}
                for worker in client.get_workers()
            )

        wait_until(working, timeout=30, message="the job worker did not join its queues")
        yield JobMesh(redis_url, prefix, client)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
        stop(process)
        client.close()
