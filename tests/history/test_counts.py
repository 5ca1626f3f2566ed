"""The history a real worker writes matches the runs its handlers made: counts
over a run with failures, and percentiles within one bucket of the run times
the handlers measured."""

from __future__ import annotations

import json
import math
import random
from bisect import bisect_left

import pytest

import worqr
from tests.history.conftest import HistoryMesh
from tests.support.cli import assert_one_line_error, run_cli
from tests.support.waiting import wait_until
from worqr._cli.base import EXIT_USAGE
from worqr._core.history_model import BOUNDS, totals


def bucket(seconds: float) -> int:
    return min(bisect_left(BOUNDS, seconds), len(BOUNDS) - 1)


def measured_percentile(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


@pytest.mark.slow
def test_the_counts_are_the_runs_made_and_percentiles_within_a_bucket(
    history_mesh: HistoryMesh,
) -> None:
    wq = history_mesh.client
    rng = random.Random(30)
    # 60 jobs: most finish at once, some fail a run then finish, some fail twice.
    payloads = [
        f"{rng.choice([0.002, 0.01, 0.03, 0.08, 0.2])}:{rng.choice([0] * 6 + [1, 2])}"
        for _ in range(60)
    ]
    refs = [wq.submit("timed", payload) for payload in payloads]

    def all_ended() -> bool:
        return all(wq.get_job("timed", ref.id).state in ("finished", "failed") for ref in refs)

    wait_until(all_ended, timeout=60, message="the jobs did not end")
    runs = history_mesh.measured()
    wanted = {
        name: sum(1 for o, _ in runs if o == name) for name in ("finished", "retried", "failed")
    }
    assert wanted["retried"] and wanted["failed"], wanted  # the run had failures

    def written() -> dict[str, int | float | None]:
        return totals(wq.get_history("timed", since=600))

    def flushed() -> bool:  # a run's end is told after its job's state changed
        got = written()
        return [got["started"], sum(got[name] or 0 for name in wanted)] == [len(runs)] * 2

    wait_until(flushed, timeout=10, message="not flushed")
    got = written()
    assert got["started"] == len(runs)
    assert {name: got[name] for name in wanted} == wanted
    assert got["cancelled"] == 0
    times = [seconds for _, seconds in runs]
    for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99)):
        reported = got[name]
        assert isinstance(reported, float)
        assert abs(bucket(reported) - bucket(measured_percentile(times, q))) <= 1, name


@pytest.mark.slow
def test_points_are_minutes_oldest_first_within_since(history_mesh: HistoryMesh) -> None:
    wq = history_mesh.client
    ref = wq.submit("timed", "0.001:0")
    wait_until(lambda: wq.get_job("timed", ref.id).state == "finished", timeout=30)
    wait_until(lambda: wq.get_history("timed", since=120), timeout=10, message="not flushed")
    points = wq.get_history("timed", since=120)
    assert all(isinstance(p, worqr.HistoryPoint) and p.step == 60 for p in points)
    assert [p.time for p in points] == sorted(p.time for p in points)
    assert all(p.time % 60 == 0 for p in points)
    assert sum(p.finished for p in points) == 1
    coarse = wq.get_history("timed", since=9 * 3600)
    assert [p.step for p in coarse] == [600] and coarse[0].finished == 1


@pytest.mark.parametrize("since", [0, -1, float("nan"), float("inf"), 72 * 3600 + 1])
def test_a_bad_since_is_refused(wq: worqr.Worqr, since: float) -> None:
    with pytest.raises(ValueError, match="since"):
        wq.get_history("q", since=since)


@pytest.mark.parametrize("since", ["1h", True, None])
def test_a_since_of_another_type_is_refused(wq: worqr.Worqr, since: object) -> None:
    with pytest.raises(TypeError, match="since"):
        wq.get_history("q", since=since)  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_command_shows_the_history(history_mesh: HistoryMesh) -> None:
    wq = history_mesh.client
    refs = [wq.submit("timed", payload) for payload in ("0.001:0", "0.001:1", "0.001:2")]
    wait_until(
        lambda: all(wq.get_job("timed", r.id).state in ("finished", "failed") for r in refs),
        timeout=30,
    )
    wanted = {"started": 5, "finished": 2, "retried": 2, "failed": 1, "cancelled": 0}

    def flushed() -> bool:
        got = totals(wq.get_history("timed"))
        return {name: got[name] for name in wanted} == wanted

    wait_until(flushed, timeout=10)
    where = ("--url", history_mesh.url, "--prefix", history_mesh.prefix)
    shown = run_cli("history", "timed", "--since", "30m", "--json", *where)
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert document["queue"] == "timed"
    assert {name: document["totals"][name] for name in wanted} == wanted
    assert sum(point["started"] for point in document["points"]) == 5
    assert document["totals"]["p99"] is not None
    table = run_cli("history", "timed", *where)
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[-1].split()[:6] == ["total", "5", "2", "2", "1", "0"]


@pytest.mark.parametrize("since", ["0", "-5m", "4d", "1w", "soon"])
def test_the_command_refuses_a_bad_since(since: str) -> None:
    result = run_cli("history", "q", "--since", since, "--url", "redis://127.0.0.1:1")
    assert_one_line_error(result, EXIT_USAGE, "since")
