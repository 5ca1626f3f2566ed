"""`worqr schedule`, `unschedule` and `schedules`: what they write and show,
and bad cron expressions or time zones refused with exit 2, one line, nothing
written."""

from __future__ import annotations

import json

import pytest
import redis

import worqr
from tests.support.cli import assert_one_line_error, run_cli


def cli(url: str, prefix: str, *args: str) -> tuple[int, str, str]:
    result = run_cli(*args, "--url", url, "--prefix", prefix)
    return result.returncode, result.stdout, result.stderr


def test_schedule_list_and_unschedule(redis_url: str, prefix: str) -> None:
    code, out, err = cli(
        redis_url, prefix, "schedule", "reports", "nightly", "--cron", "0 3 * * *",
        "--tz", "Europe/Berlin", "{}",
    )  # fmt: skip
    assert code == 0, err
    assert "schedule 'nightly' of queue 'reports': next run 20" in out
    code, out, err = cli(redis_url, prefix, "schedule", "reports", "ping", "--every", "30")
    assert code == 0, err
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        listed = wq.get_schedules("reports")
    assert [(s.name, s.cron, s.every, s.tz) for s in listed] == [
        ("nightly", "0 3 * * *", None, "Europe/Berlin"),
        ("ping", None, 30.0, "UTC"),
    ]
    code, out, _ = cli(redis_url, prefix, "schedules")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["QUEUE", "NAME", "WHEN", "TZ", "NEXT", "RUN"]
    assert "nightly" in lines[1] and "0 3 * * *" in lines[1] and "Europe/Berlin" in lines[1]
    assert "every 30 s" in lines[2]
    code, out, _ = cli(redis_url, prefix, "schedules", "reports", "--json")
    document = json.loads(out)
    assert [s["name"] for s in document] == ["nightly", "ping"]
    assert document[0]["next_run"] == listed[0].next_run

    assert cli(redis_url, prefix, "unschedule", "reports", "nightly")[0] == 0
    result = run_cli("unschedule", "reports", "nightly", "--url", redis_url, "--prefix", prefix)
    assert_one_line_error(result, 1, "no schedule 'nightly'")
    assert "ping" in cli(redis_url, prefix, "schedules", "reports")[1]


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--cron", "0 25 * * *"], "bad cron expression '0 25 * * *'"),
        (["--cron", "every day"], "bad cron expression"),
        (["--cron", "0 3 * * *", "--tz", "Europe/Atlantis"], "unknown time zone 'Europe/Atlantis'"),
    ],
)
def test_bad_cron_or_time_zone_exits_2_in_one_line_and_writes_nothing(
    redis_url: str, prefix: str, redis_client: redis.Redis, options: list[str], words: str
) -> None:
    result = run_cli("schedule", "q", "s", *options, "--url", redis_url, "--prefix", prefix)
    assert_one_line_error(result, 2, words)
    assert list(redis_client.scan_iter(match=f"{{{prefix}*")) == []


def test_cron_and_every_together_is_bad_usage(redis_url: str, prefix: str) -> None:
    result = run_cli(
        "schedule", "q", "s", "--cron", "* * * * *", "--every", "5", "--url", redis_url
    )
    assert result.returncode == 2 and "not allowed with" in result.stderr
