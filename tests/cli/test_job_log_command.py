"""`worqr job QUEUE ID --log`: the newest lines of a job's log, as text or JSON."""

from __future__ import annotations

import json

import worqr
from tests.support.cli import assert_one_line_error, run_cli
from tests.support.job_logs import logged_job


def test_job_log_prints_the_newest_lines(
    redis_url: str, prefix: str, wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    def cli(*args: str) -> tuple[int, str, str]:
        result = run_cli(*args, "--url", redis_url, "--prefix", prefix)
        return result.returncode, result.stdout, result.stderr

    lines = [f"line {i}" for i in range(150)]
    id = logged_job(wq, worker, "q", lines)
    code, out, err = cli("job", "q", id, "--log")
    assert (code, err) == (0, "")
    assert out.splitlines() == lines[-100:]  # the default: the newest 100
    assert cli("job", "q", id, "--log", "3")[1] == "line 147\nline 148\nline 149\n"
    document = json.loads(cli("job", "q", id, "--log", "2", "--json")[1])
    assert document == {"queue": "q", "id": id, "log": ["line 148", "line 149"]}
    wq.submit("q", "p", id="silent")
    assert cli("job", "q", "silent", "--log") == (0, "", "")
    code, out, err = cli("job", "q", "nope", "--log")
    assert (code, out) == (1, "")
    assert err == "worqr job: error: no job 'nope' on queue 'q' (or it was purged)\n"


def test_job_log_usage_errors() -> None:
    assert_one_line_error(run_cli("job", "q", "x", "--log", "0"), 2, "must be at least 1")
    assert_one_line_error(run_cli("job", "q", "x", "--log", "1001"), 2, "at most 1,000")
    assert_one_line_error(
        run_cli("job", "q", "x", "--log", "--cancel"), 2, "argument --cancel: not allowed with"
    )
