"""`python -m benchmarks.paired`: its statistics, and a smoke run of a git
revision against this tree. Proves the tool runs and its intervals mean what
they say, not how fast anything is."""

from __future__ import annotations

import math
import random
import subprocess
import sys

import pytest

from benchmarks.paired import Interval, summarize
from tests.support import ROOT


def width(interval: Interval) -> float:
    return interval.high - interval.low


def test_pairs_that_agree_give_their_ratio_and_no_spread() -> None:
    summary = summarize([0.97] * 10)
    for interval in (summary.median, summary.geometric_mean):
        assert interval.value == pytest.approx(0.97)
        assert interval.low == pytest.approx(0.97) and interval.high == pytest.approx(0.97)
    assert summary.below_one == 10 and summary.pairs == 10


def test_the_geometric_mean_weighs_a_ratio_and_its_inverse_alike() -> None:
    """2x faster and 2x slower cancel (an arithmetic mean would say 1.25x)."""
    summary = summarize([0.5, 2.0, 0.8, 1.25])
    assert summary.geometric_mean.value == pytest.approx(1.0)
    assert summary.geometric_mean.low < 1.0 < summary.geometric_mean.high
    assert summary.below_one == 2


def test_more_pairs_narrow_both_intervals_around_the_true_ratio() -> None:
    rng = random.Random(7)
    few = [0.96 * math.exp(rng.gauss(0, 0.1)) for _ in range(8)]
    many = [0.96 * math.exp(rng.gauss(0, 0.1)) for _ in range(200)]
    narrow, wide = summarize(many), summarize(few)
    assert width(narrow.median) < width(wide.median) / 2
    assert width(narrow.geometric_mean) < width(wide.geometric_mean) / 2
    assert narrow.geometric_mean.low < 0.96 < narrow.geometric_mean.high
    assert narrow.median.low < 0.96 < narrow.median.high


def test_the_intervals_are_the_same_for_the_same_ratios() -> None:
    ratios = [0.9, 1.05, 0.97, 1.1, 0.93]
    assert summarize(ratios) == summarize(list(ratios))


@pytest.mark.parametrize(
    ("ratios", "says"),
    [([1.0], "at least 2 ratios"), ([1.0, 0.0], "positive"), ([1.0, math.nan], "positive")],
)
def test_too_few_or_bad_ratios_are_refused(ratios: list[float], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        summarize(ratios)


def worktrees() -> str:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    )
    return listed.stdout


def paired(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "benchmarks.paired", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)


@pytest.mark.slow
def test_a_revision_runs_against_this_tree_and_its_worktree_goes() -> None:
    before = worktrees()
    done = paired("HEAD", "--pairs", "2", "--quick")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "pair 1: drain.rate " in done.stdout and "pair 2: drain.rate " in done.stdout
    assert "- drain.rate: median " in done.stdout
    assert "- drain.rate_with_start: median " in done.stdout
    assert worktrees() == before  # the revision's checkout was removed


def test_a_name_that_is_no_directory_and_no_revision_is_refused() -> None:
    done = paired("no-such-revision-of-worqr", "--pairs", "2")
    assert done.returncode != 0
    assert "'no-such-revision-of-worqr' is neither a directory nor a revision" in done.stderr


def test_bad_arguments_are_refused_before_any_run() -> None:
    done = paired("HEAD", "--pairs", "1")
    assert done.returncode == 2 and "--pairs must be at least 2" in done.stderr
    done = paired("HEAD", "--workloads", "drain,recovery")
    assert done.returncode == 2 and "unknown recovery" in done.stderr
