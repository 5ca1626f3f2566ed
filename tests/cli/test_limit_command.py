"""`worqr limit`: sets, shows and removes a job queue's limits; `worqr status`
shows them; bad input exits 2 with nothing written, a task queue exits 1."""

from __future__ import annotations

import json

import worqr
from tests.support.cli import run_cli


def cli(url: str, prefix: str, *args: str) -> tuple[int, str, str]:
    result = run_cli(*args, "--url", url, "--prefix", prefix)
    return result.returncode, result.stdout, result.stderr


def test_limit_sets_shows_and_removes(redis_url: str, prefix: str) -> None:
    code, out, err = cli(redis_url, prefix, "limit", "api", "--rate", "20/1", "--max-active", "3")
    assert code == 0, err
    assert out.strip() == "api: rate 20/1s, max active 3 (0 active)"
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        wq.submit("api", "x")  # a job queue now: status lists it with its limits
        limits = wq.get_limits("api")
    assert (limits.rate, limits.max_active) == ((20, 1.0), 3)
    code, out, err = cli(redis_url, prefix, "status")
    assert code == 0, err
    assert [line.split(None, 1) for line in out.splitlines() if line.startswith("api  ")][-1] == [
        "api",
        "rate 20/1s, max active 3 (0 active)",
    ]
    code, out, err = cli(redis_url, prefix, "limit", "api", "--no-rate", "--rate", "5/m")
    assert code == 2 and "not allowed with" in err
    code, out, err = cli(redis_url, prefix, "limit", "api", "--no-max-active", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert (shown["rate"], shown["max_active"], shown["limited"]) == ([20, 1.0], None, False)
    code, out, err = cli(redis_url, prefix, "limit", "api", "--no-rate")
    assert (code, out.strip()) == (0, "api: no limits")


def test_bad_input_and_task_queues_are_refused(redis_url: str, prefix: str) -> None:
    for bad in (["--rate", "0/1"], ["--rate", "ten/1"], ["--max-active", "0"]):
        code, _, err = cli(redis_url, prefix, "limit", "fresh", *bad)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        assert wq.get_queues() == []  # nothing written
        wq.enqueue("tasks", "t")
    code, _, err = cli(redis_url, prefix, "limit", "tasks", "--rate", "1/1")
    assert code == 1 and "holds tasks" in err
