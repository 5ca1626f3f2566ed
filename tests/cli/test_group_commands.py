"""Fair-share groups on the command line: `worqr submit --group`, `worqr groups`
(a table, or JSON with the `GroupInfo` fields, paged up to --limit), `worqr
limit --group` and the queue's --group-rate/--group-max-active, `worqr
pause/resume --group`. Bad input exits 2 with one line and writes nothing."""

from __future__ import annotations

import json

import pytest
import redis

import worqr
from tests.support.cli import assert_one_line_error, run_cli

FIELDS = {
    "name",
    "queued",
    "delayed",
    "active",
    "paused",
    "rate",
    "max_active",
    "closed_until",
    "limited",
}


def cli(url: str, prefix: str, *args: str) -> tuple[int, str, str]:
    result = run_cli(*args, "--url", url, "--prefix", prefix)
    return result.returncode, result.stdout, result.stderr


def test_submit_with_a_group_and_list_the_groups(redis_url: str, prefix: str) -> None:
    ids = {}
    for group, payload in (("acme", "a1"), ("acme", "a2"), ("globex", "g1")):
        code, out, err = cli(redis_url, prefix, "submit", "api", payload, "--group", group)
        assert code == 0 and err == "", err
        ids[payload] = out.strip()
    code, out, err = cli(redis_url, prefix, "submit", "api", "plain")  # ungrouped: no group row
    assert code == 0, err
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        job = wq.get_job("api", ids["g1"])
        assert job is not None and (job.group, job.state) == ("globex", "queued")
    code, out, err = cli(redis_url, prefix, "groups", "api", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["queue"] == "api" and shown["more"] is False
    by_name = {g["name"]: g for g in shown["groups"]}
    assert set(by_name) == {"acme", "globex"}
    assert all(set(g) == FIELDS for g in shown["groups"])
    assert (by_name["acme"]["queued"], by_name["globex"]["queued"]) == (2, 1)
    assert by_name["acme"]["limited"] is False and by_name["acme"]["rate"] is None
    code, out, err = cli(redis_url, prefix, "groups", "api")
    assert code == 0, err
    header, *rows = out.splitlines()
    assert header == "GROUP   QUEUED  DELAYED  ACTIVE  RATE  MAX ACTIVE  STATE"
    assert sorted(row.split()[:4] for row in rows) == [
        ["acme", "2", "0", "0"],
        ["globex", "1", "0", "0"],
    ]


def test_groups_pages_through_the_cursor_up_to_the_limit(redis_url: str, prefix: str) -> None:
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        for i in range(1500):  # more than one page of `get_groups` (1,000)
            wq.submit("api", "x", group=f"tenant-{i:04}")
    code, out, err = cli(redis_url, prefix, "groups", "api", "--json", "--limit", "1200")
    assert code == 0, err
    shown = json.loads(out)
    names = [g["name"] for g in shown["groups"]]
    assert len(names) == len(set(names)) == 1200 and shown["more"] is True
    code, out, err = cli(redis_url, prefix, "groups", "api", "--json", "--limit", "5000")
    shown = json.loads(out)
    assert len({g["name"] for g in shown["groups"]}) == 1500 and shown["more"] is False
    code, out, err = cli(redis_url, prefix, "groups", "api")  # the default: 100
    assert code == 0, err
    assert len(out.splitlines()) == 1 + 100 + 1 and "--limit N for more" in out.splitlines()[-1]
    code, out, err = cli(redis_url, prefix, "groups", "empty")
    assert (code, out.strip()) == (0, "queue 'empty': no groups"), err


def test_limit_a_group_and_every_group(redis_url: str, prefix: str) -> None:
    code, out, err = cli(
        redis_url, prefix, "limit", "api", "--group", "acme", "--rate", "5/1", "--max-active", "2"
    )
    assert (code, out.strip()) == (0, "api group 'acme': rate 5/1s, max active 2 (0 active)"), err
    code, out, err = cli(
        redis_url, prefix, "limit", "api", "--group-rate", "10/m", "--group-max-active", "3"
    )
    assert (code, out.strip()) == (0, "api: no limits; every group: rate 10/60s, max active 3")
    code, out, err = cli(redis_url, prefix, "limit", "api", "--json")
    shown = json.loads(out)
    assert (shown["group_rate"], shown["group_max_active"]) == ([10, 60.0], 3), out
    code, out, err = cli(redis_url, prefix, "limit", "api", "--group", "other", "--json")
    assert code == 0, err
    shown = json.loads(out)  # a group with no limits of its own: the queue's
    assert (shown["group"], shown["rate"], shown["max_active"]) == ("other", [10, 60.0], 3)
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        [info], _ = wq.get_groups("api")
        assert (info.name, info.rate, info.max_active) == ("acme", (5, 1.0), 2)
    code, out, err = cli(redis_url, prefix, "limit", "api", "--group", "acme", "--no-rate")
    expected = "api group 'acme': rate 10/60s, max active 2 (0 active)"  # the queue's rate now
    assert (code, out.strip()) == (0, expected), err
    code, out, err = cli(
        redis_url, prefix, "limit", "api", "--no-group-rate", "--no-group-max-active"
    )
    assert (code, out.strip()) == (0, "api: no limits"), err
    code, out, err = cli(redis_url, prefix, "limit", "api", "--group", "acme", "--no-max-active")
    assert (code, out.strip()) == (0, "api group 'acme': no limits"), err
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        assert wq.get_groups("api") == ([], None)  # no jobs, limits or pause: no key left


def test_pause_and_resume_a_group(redis_url: str, prefix: str) -> None:
    code, out, err = cli(redis_url, prefix, "pause", "api", "--group", "acme")
    assert (code, out.strip()) == (0, "group 'acme' of api: paused"), err
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        assert wq.is_paused("api", group="acme") and not wq.is_paused("api")
    code, out, err = cli(redis_url, prefix, "limit", "api", "--group", "acme")
    assert (code, out.strip()) == (0, "api group 'acme': paused"), err
    code, out, err = cli(redis_url, prefix, "groups", "api")
    assert out.splitlines()[1].split()[0] == "acme" and out.splitlines()[1].endswith("paused")
    code, out, err = cli(redis_url, prefix, "resume", "api", "--group", "acme")
    assert (code, out.strip()) == (0, "group 'acme' of api: resumed"), err
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        assert not wq.is_paused("api", group="acme")


@pytest.mark.parametrize(
    "bad",
    [
        ["submit", "api", "x", "--group", ""],
        ["submit", "api", "x", "--group", "a\u0001b"],
        ["submit", "api", "x", "--group", "g" * 257],
        ["groups", "api", "--limit", "0"],
        ["groups", "a{b}"],
        ["limit", "api", "--group", ""],
        ["limit", "api", "--group", "acme", "--rate", "0/1"],
        ["limit", "api", "--group", "acme", "--group-rate", "5/1"],
        ["limit", "api", "--group", "acme", "--no-group-max-active"],
        ["limit", "api", "--group-rate", "5/1", "--no-group-rate"],
        ["limit", "api", "--group-max-active", "0"],
        ["limit", "api", "--group-rate", "five/1"],
        ["pause", "api", "--group", ""],
        ["pause", "api", "--group", "g", "--schedule", "s"],
        ["resume", "api", "--group", "a\u0007"],
        ["jobs", "api", "--group", "", "--cancel"],
        ["jobs", "api", "--group", "g", "--retry"],
        ["jobs", "api", "--group", "a\u0007"],
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    redis_url: str, prefix: str, redis_client: redis.Redis, bad: list[str]
) -> None:
    result = run_cli(*bad, "--url", redis_url, "--prefix", prefix)
    assert_one_line_error(result, 2)
    assert list(redis_client.scan_iter(match=f"*{prefix}*")) == []


def test_list_and_cancel_one_groups_jobs(redis_url: str, prefix: str) -> None:
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        for group in ("acme", "globex"):
            wq.submit_many("api", [f"{group}{i}" for i in range(3)], group=group)
        wq.submit("api", "plain")
    code, out, err = cli(redis_url, prefix, "jobs", "api", "--state", "queued", "--json")
    assert code == 0, err
    assert len(json.loads(out)["jobs"]) == 7  # the grouped ones too
    code, out, err = cli(
        redis_url, prefix, "jobs", "api", "--state", "queued", "--group", "acme", "--json"
    )
    assert code == 0, err
    assert [job["group"] for job in json.loads(out)["jobs"]] == ["acme"] * 3
    code, out, err = cli(redis_url, prefix, "jobs", "api", "--group", "acme", "--cancel")
    assert (code, err) == (0, "")
    assert out == "cancelled 3 jobs on 'api'\n"
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        assert wq.count_jobs("api")["queued"] == 4


def test_a_task_queue_is_refused(redis_url: str, prefix: str) -> None:
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        wq.enqueue("tasks", "t")
    where = ("--url", redis_url, "--prefix", prefix)
    for args in (
        ["limit", "tasks", "--group", "g", "--max-active", "1"],
        ["limit", "tasks", "--group-max-active", "1"],
        ["pause", "tasks", "--group", "g"],
    ):
        assert_one_line_error(run_cli(*args, *where), 1, "holds tasks")
