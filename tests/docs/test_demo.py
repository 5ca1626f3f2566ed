"""`worqr demo` as a user runs it, and its accounting."""

from __future__ import annotations

import re

import pytest
import redis

import worqr
from tests.support.cli import run_cli
from worqr._demo import handlers
from worqr._demo.summary import Tally, account


def summary_numbers(stdout: str) -> dict[str, int]:
    found = re.findall(r"^  (enqueued|finished|cancelled|failed|lost) +(\d+)", stdout, re.M)
    return {name: int(value) for name, value in found}


@pytest.mark.slow
def test_demo_runs_on_its_own_redis_and_balances() -> None:
    result = run_cli("demo", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    numbers = summary_numbers(out)
    assert numbers["enqueued"] == 3008
    assert numbers["finished"] + numbers["cancelled"] + numbers["failed"] == numbers["enqueued"]
    assert numbers["lost"] == 0
    assert numbers["failed"] > 0 and numbers["cancelled"] > 0
    assert "embedded redis-server" in out
    assert re.search(r"SIGKILLed worker process \d+ while it held \d+ jobs", out)
    assert re.search(r"its peers failed it [\d.]+ s later and returned \d+ tasks", out)
    assert re.search(r"the supervisor started a replacement: pid \d+", out)
    assert re.search(r"metrics  worqr_tasks_finished_total = \d+", out)
    assert "FAIL" not in out
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_demo_on_a_given_redis_leaves_no_queues(redis_url: str, redis_client: redis.Redis) -> None:
    result = run_cli("demo", "--url", redis_url, "--tasks", "400", "--processes", "3", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    numbers = summary_numbers(result.stdout)
    assert numbers["enqueued"] == 406 and numbers["lost"] == 0
    assert "Redis at the given --url" in result.stdout
    [prefix] = re.findall(r"key prefix '([^']+)'", result.stdout)
    assert worqr.Worqr(redis_url, prefix=prefix).get_queues() == []
    assert list(redis_client.scan_iter(match="worqr-demo:*")) == []


def test_accounting_fails_when_a_task_is_unaccounted(
    redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    # A payload the demo believes it enqueued but that is nowhere: the summary
    # must say "lost" and the check must fail (the demo then exits non-zero).
    lines: list[str] = []
    with worqr.Worqr(redis_url, prefix=prefix) as client:
        client.enqueue(handlers.JOBS, "job-00001")
        client.start_worker()
        process = client.dequeue(handlers.JOBS)
        assert process is not None and client.finish_process(process)
        redis_client.sadd(handlers.key(prefix, "done"), "job-00001")
        tally = Tally(jobs=["job-00001", "job-00002"])
        assert account(client, redis_client, prefix, tally, lines.append) is False
    handlers.cleanup(redis_client, prefix)
    text = "\n".join(lines)
    assert summary_numbers(text) == {
        "enqueued": 2,
        "finished": 1,
        "cancelled": 0,
        "failed": 0,
        "lost": 1,
    }
    assert "FAIL finished + cancelled + failed = enqueued" in text
    assert "FAIL nothing lost" in text
