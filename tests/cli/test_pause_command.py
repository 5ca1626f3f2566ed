"""`worqr pause` and `worqr resume`: a job queue's durable pause and a
schedule's; `worqr limit`, `status` and `schedules` show them; bad input exits 2
with nothing written, a missing schedule or a task queue exits 1."""

from __future__ import annotations

import json

import worqr
from tests.support.cli import assert_one_line_error, run_cli


def cli(url: str, prefix: str, *args: str) -> tuple[int, str, str]:
    result = run_cli(*args, "--url", url, "--prefix", prefix)
    return result.returncode, result.stdout, result.stderr


def test_pause_and_resume_a_queue_and_show_it(redis_url: str, prefix: str) -> None:
    code, out, err = cli(redis_url, prefix, "pause", "api")
    assert (code, out.strip()) == (0, "api: paused"), err
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        assert wq.is_paused("api")
        wq.submit("api", "x")
    code, out, err = cli(redis_url, prefix, "limit", "api")
    assert (code, out.strip()) == (0, "api: paused"), err
    code, out, err = cli(redis_url, prefix, "limit", "api", "--max-active", "2", "--json")
    assert code == 0 and json.loads(out)["paused"] is True, err
    code, out, err = cli(redis_url, prefix, "status")
    assert code == 0, err
    assert [line.split(None, 1) for line in out.splitlines() if line.startswith("api  ")][-1] == [
        "api",
        "paused, max active 2 (0 active)",
    ]
    code, out, err = cli(redis_url, prefix, "status", "--json")
    assert [q["paused"] for q in json.loads(out)["queues"] if q["name"] == "api"] == [True]
    code, out, err = cli(redis_url, prefix, "resume", "api")
    assert (code, out.strip()) == (0, "api: resumed"), err
    code, out, err = cli(redis_url, prefix, "limit", "api")
    assert (code, out.strip()) == (0, "api: max active 2 (0 active)"), err


def test_pause_and_resume_a_schedule(redis_url: str, prefix: str) -> None:
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        wq.schedule("api", "nightly", every=3600)
    code, out, err = cli(redis_url, prefix, "pause", "api", "--schedule", "nightly")
    assert (code, out.strip()) == (0, "schedule 'nightly' of api: paused"), err
    code, out, err = cli(redis_url, prefix, "schedules", "api")
    assert code == 0 and out.splitlines()[1].endswith("  paused"), out
    code, out, err = cli(redis_url, prefix, "schedules", "api", "--json")
    assert json.loads(out)[0]["paused"] is True
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        assert not wq.is_paused("api")  # the queue itself runs
    code, out, err = cli(redis_url, prefix, "resume", "api", "--schedule", "nightly")
    assert (code, out.strip()) == (0, "schedule 'nightly' of api: resumed"), err
    code, out, err = cli(redis_url, prefix, "schedules", "api", "--json")
    assert json.loads(out)[0]["paused"] is False


def test_bad_input_a_missing_schedule_and_task_queues_are_refused(
    redis_url: str, prefix: str
) -> None:
    where = ("--url", redis_url, "--prefix", prefix)
    for bad in (["pause", "a{b}"], ["resume", ""], ["pause", "q", "--schedule", ""]):
        assert_one_line_error(run_cli(*bad, *where), 2)
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        assert wq.get_queues() == [] and not wq.is_paused("q")  # nothing written
        wq.enqueue("tasks", "t")
    for command in ("pause", "resume"):
        result = run_cli(command, "q", "--schedule", "nope", *where)
        assert_one_line_error(result, 1, "no schedule 'nope'")
    assert_one_line_error(run_cli("pause", "tasks", *where), 1, "holds tasks")
