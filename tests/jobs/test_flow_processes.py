"""A hop survives its relay's death: real `worqr worker` processes, one
SIGKILLed between a step's finish and the relay of its hop. A peer relays the
hop after the relay lease, and the next step is created, and runs, once."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import worqr
from tests.support import APPS
from tests.support.cli import cli_env, start_cli
from tests.support.processes import kill_pids
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def workers(redis_url: str, prefix: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = cli_env(PYTHONPATH=str(APPS), JOB_RECORD=prefix)
    args = ["worker", "flow_app:worker", "--url", redis_url, "--prefix", prefix]
    args += ["--processes", "2", "--ttl", "1.0", "--heartbeat", "0.2"]
    with open(tmp_path / "worker.log", "ab") as log:
        process = start_cli(*args, env=env, stdout=log, stderr=log)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            kill_pids([process.pid])


def test_a_worker_killed_between_finish_and_relay_leaves_the_hop_to_a_peer(
    workers: subprocess.Popen[bytes], redis_url: str, prefix: str
) -> None:
    raw = redis.Redis.from_url(redis_url)
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        wait_until(lambda: len(wq.get_workers()) >= 2, 30, message="two workers")
        raw.set(f"{prefix}:kill-before-relay", 1)
        flow = wq.submit_chain([worqr.Step("s1", "x"), worqr.Step("s2"), worqr.Step("s3")])
        wait_until(lambda: wq.get_flow(flow.id).state != "running", 60, message="the chain")
        assert wq.result("s3", f"{flow.id}.2", timeout=0) == "x|s1|s2|s3"
        events = [e.decode().split(" ") for e in raw.lrange(f"{prefix}:events", 0, -1)]
        killed = [e for e in events if e[0] == "killed"]
        assert len(killed) == 1, events  # a worker died holding a hop
        started = [e[1] for e in events if e[0] == "started"]
        assert sorted(started) == sorted(f"{flow.id}.{k}" for k in range(3)), events
        info = wq.get_flow(flow.id)
        assert info.state == "finished"
        assert [job.attempts for job in info.jobs] == [1, 1, 1]
        for queue in ("s1", "s2", "s3"):
            stats = raw.hgetall(f"{{{prefix}:{queue}}}:stats")
            assert int(stats[b"submitted"]) == 1, (queue, stats)
            assert raw.zcard(f"{{{prefix}:{queue}}}:job:outbox") == 0
    raw.close()
