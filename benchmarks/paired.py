"""Before and after, paired: one benchmark run on two trees in turn.

    python -m benchmarks.paired 4042bc7                  # that commit against this tree
    python -m benchmarks.paired ../old ../new --pairs 40 --handler io
    python -m benchmarks.paired main --workloads drain,cost --system worqr

BEFORE and AFTER are each a directory holding a worqr tree or a git revision of
this repository (checked out into a temporary worktree, removed at the end);
AFTER defaults to this tree. Each pair runs ``benchmarks.compare`` once on each
tree (one repetition, its own Redis), alternating which goes first; each run
imports its own tree's worqr and benchmark code.

Why pairs: on a small shared VM one run of a drain swings by 10 to 20% as the
machine's speed drifts, so two medians taken minutes apart cannot show a few
percent. The ratio of two runs taken back to back cancels most of the drift,
and many such ratios narrow the interval. Prints each pair's ratio AFTER/BEFORE
and, per figure, the median ratio with a bootstrap 95% interval and the
geometric mean with a normal 95% interval (about 40 pairs resolve 3% here).
Which way is better depends on the figure: a rate higher, a cost lower.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FIGURES: dict[str, tuple[str, ...]] = {
    "drain": ("rate", "rate_with_start"),
    "cost": ("worker_cpu_us", "redis_cpu_us", "client_commands"),
    "latency": ("p50_ms", "worker_cpu_us", "redis_cpu_us"),
    "enqueue": ("each_per_s", "bulk_per_s"),
}
"""The figures compared, by workload (keys of `benchmarks.compare`'s summary)."""


@dataclass(frozen=True)
class Interval:
    """A ratio AFTER/BEFORE and its 95% interval."""

    value: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.value:.3f} (95%: {self.low:.3f} to {self.high:.3f})"


@dataclass(frozen=True)
class Summary:
    """What the pairs of one figure say."""

    pairs: int
    median: Interval  # of the pairs' ratios, bootstrap interval
    geometric_mean: Interval  # of the ratios, normal interval on their logs
    below_one: int  # pairs whose ratio is under 1


def summarize(ratios: Sequence[float], *, resamples: int = 4000, seed: int = 0) -> Summary:
    """The median and geometric mean of ``ratios`` (each AFTER/BEFORE of one
    pair, positive), each with its 95% interval. Seeded: the same ratios give
    the same intervals."""
    if len(ratios) < 2:
        raise ValueError(f"summarize needs at least 2 ratios, got {len(ratios)}")
    if any(not ratio > 0 for ratio in ratios):
        raise ValueError("ratios must be positive")
    logs = [math.log(ratio) for ratio in ratios]
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(logs, k=len(logs))) for _ in range(resamples))
    tail = int(resamples * 0.025)
    median = Interval(
        math.exp(statistics.median(logs)),
        math.exp(medians[tail]),
        math.exp(medians[resamples - 1 - tail]),
    )
    mean = statistics.fmean(logs)
    half = 1.96 * statistics.stdev(logs) / math.sqrt(len(logs))
    geometric = Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half))
    return Summary(len(ratios), median, geometric, sum(log < 0 for log in logs))


@contextlib.contextmanager
def tree(where: str) -> Iterator[Path]:
    """``where`` as a directory: itself, or a worktree of that git revision;
    its worqr compiled to bytecode either way (a tree older than
    `harness.compile_worqr` would compile it in every worker it starts)."""
    path = Path(where)
    if path.is_dir():
        compileall.compile_dir(path / "worqr", quiet=1)
        yield path.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="worqr-paired-") as scratch:
        checkout = Path(scratch) / "tree"
        git = ["git", "-C", str(ROOT)]
        try:
            subprocess.run(
                [*git, "worktree", "add", "--detach", str(checkout), where],
                check=True,
                capture_output=True,
                text=True,
            )
        except subprocess.CalledProcessError as error:
            raise SystemExit(
                f"{where!r} is neither a directory nor a revision: {error.stderr}"
            ) from None
        try:
            compileall.compile_dir(checkout / "worqr", quiet=1)
            yield checkout
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(checkout)], check=False)


def run_once(
    directory: Path, system: str, workloads: str, handler: str, quick: bool
) -> dict[str, float]:
    """One `benchmarks.compare` run in ``directory``: its figures by
    'workload.figure'."""
    with tempfile.TemporaryDirectory(prefix="worqr-paired-run-") as out:
        command = [sys.executable, "-m", "benchmarks.compare", "--systems", system]
        command += ["--workloads", workloads, "--reps", "1", "--handler", handler, "--out", out]
        done = subprocess.run(
            [*command, *(["--quick"] if quick else [])],
            cwd=directory,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{directory}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        document = json.loads((Path(out) / "latest.json").read_text())
    failed = [run.get("error") for run in document["runs"] if not run["ok"]]
    if failed:
        raise RuntimeError(f"{directory}: {failed}")
    summary = document["summary"]
    return {
        f"{workload}.{figure}": float(summary[workload][system][figure])
        for workload in workloads.split(",")
        for figure in FIGURES[workload]
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.paired",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("before", help="a directory holding a worqr tree, or a git revision")
    parser.add_argument("after", nargs="?", default=str(ROOT), help="the same (default: here)")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--system", default="worqr-jobs")
    parser.add_argument("--workloads", default="drain", help=f"of {', '.join(FIGURES)}")
    parser.add_argument("--handler", choices=("noop", "io"), default="noop")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    args = parser.parse_args(argv)
    if args.pairs < 2:
        parser.error("--pairs must be at least 2")
    unknown = sorted(set(args.workloads.split(",")) - set(FIGURES))
    if unknown:
        parser.error(f"--workloads: unknown {', '.join(unknown)} (known: {', '.join(FIGURES)})")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tree(args.before) as before, tree(args.after) as after:
        print(f"before: {before}\nafter:  {after}\n{args.pairs} pairs, {args.handler} handler")
        ratios: dict[str, list[float]] = {}
        for index in range(args.pairs):
            order = (before, after) if index % 2 == 0 else (after, before)
            runs = {
                directory: run_once(
                    directory, args.system, args.workloads, args.handler, args.quick
                )
                for directory in order
            }
            shown = []
            for name, old in runs[before].items():
                new = runs[after][name]
                ratios.setdefault(name, []).append(new / old)
                shown.append(f"{name} {old:,.1f} -> {new:,.1f} ({new / old:.3f})")
            print(f"pair {index + 1}: " + "; ".join(shown), flush=True)
    print("\nratio AFTER/BEFORE, per figure:")
    for name, values in ratios.items():
        summary = summarize(values)
        print(
            f"- {name}: median {summary.median}; geometric mean {summary.geometric_mean}; "
            f"{summary.below_one} of {summary.pairs} pairs below 1"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
