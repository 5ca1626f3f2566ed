"""Medians over repetitions, the tables, the issue's targets, and the chart."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .harness import median

Summary = dict[str, dict[str, dict[str, Any]]]  # workload -> system -> metric -> median
US = "\N{MICRO SIGN}s"
COLOURS = {
    "worqr": "#d62728",
    "worqr-async": "#f08080",
    "worqr-jobs": "#1f77b4",
    "worqr-jobs-async": "#6baed6",
}
OURS = ("worqr", "worqr-async", "worqr-jobs", "worqr-jobs-async")
NOT_PEERS = (*OURS, "raw-list")


@dataclass(frozen=True)
class Column:
    workload: str
    metric: str
    label: str
    higher_is_better: bool
    digits: int = 0


THROUGHPUT = (
    Column("enqueue", "each_per_s", "enqueue/s", True),
    Column("enqueue", "bulk_per_s", "bulk/s", True),
    Column("drain", "rate", "drain/s", True),
    Column("drain", "rate_with_start", "+start/s", True),
    Column("latency", "p50_ms", "p50 ms", False, 2),
    Column("latency", "p90_ms", "p90 ms", False, 2),
    Column("latency", "p99_ms", "p99 ms", False, 2),
    Column("latency", "max_ms", "max ms", False, 1),
)
COSTS = (
    Column("cost", "client_commands", "cmds/task", False, 2),
    Column("cost", "redis_commands", "in-Redis ops", False, 1),
    Column("cost", "redis_cpu_us", f"Redis {US}", False),
    Column("cost", "worker_cpu_us", f"worker {US}", False),
    Column("cost", "producer_cpu_us", f"producer {US}", False),
    Column("latency", "worker_cpu_us", f"worker {US} at 100/s", False),
    Column("latency", "redis_cpu_us", f"Redis {US} at 100/s", False),
    Column("memory", "bytes_per_task", "bytes/task", False),
    Column("memory", "retained_bytes_per_task", "retained bytes/task", False),
    Column("recovery", "seconds", "recovery s", False, 1),
)


def summarise(runs: Sequence[dict[str, Any]]) -> Summary:
    """Median of every numeric metric over the successful repetitions."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    errors: dict[tuple[str, str], list[str]] = defaultdict(list)
    for run in runs:
        key = (run["workload"], run["system"])
        if run["ok"]:
            grouped[key].append(run["metrics"])
        else:
            errors[key].append(run["error"])
    summary: Summary = defaultdict(dict)
    for (workload, system), metrics in grouped.items():
        merged: dict[str, Any] = {"reps": len(metrics)}
        for name in metrics[0]:
            values = [m[name] for m in metrics if name in m]
            numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            if numbers and len(numbers) == len(values):
                merged[name] = median(numbers)
            else:
                merged[name] = values[-1]  # flags and mixes: the last run's
        summary[workload][system] = merged
    for (workload, system), messages in errors.items():
        summary[workload].setdefault(system, {})["errors"] = messages
    return dict(summary)


def value(summary: Summary, column: Column, system: str) -> float | None:
    found = summary.get(column.workload, {}).get(system, {}).get(column.metric)
    return float(found) if isinstance(found, int | float) else None


def _cell(summary: Summary, column: Column, system: str) -> str:
    found = value(summary, column, system)
    if column.workload == "recovery":
        entry = summary.get("recovery", {}).get(system, {})
        if entry.get("recovered") is False:
            return f"none in {entry.get('bound_s', '?'):g} s"
    if found is None:
        return "error" if summary.get(column.workload, {}).get(system, {}).get("errors") else "-"
    return f"{found:,.{column.digits}f}"


def table(summary: Summary, systems: Sequence[str], columns: Sequence[Column]) -> list[str]:
    """A Markdown table, one row per system."""
    header = ["system", *(c.label for c in columns)]
    rows = [header, ["---", *("---:" for _ in columns)]]
    for system in systems:
        rows.append([system, *(_cell(summary, c, system) for c in columns)])
    return ["| " + " | ".join(row) + " |" for row in rows]


def ratio_table(
    summary: Summary, systems: Sequence[str], columns: Sequence[Column], base: str = "worqr"
) -> list[str]:
    """``base`` / peer for each figure; > 1 means ``base`` is better in that column
    (for "lower is better" columns the ratio is peer / ``base``)."""
    header = [f"{base} vs", *(c.label for c in columns)]
    rows = [header, ["---", *("---:" for _ in columns)]]
    for system in systems:
        if system == base:
            continue
        cells = [system]
        for column in columns:
            ours, theirs = value(summary, column, base), value(summary, column, system)
            if ours is None or theirs is None or ours <= 0 or theirs <= 0:
                cells.append("-")
                continue
            ratio = ours / theirs if column.higher_is_better else theirs / ours
            cells.append(f"{ratio:.2f}x")
        rows.append(cells)
    return ["| " + " | ".join(row) + " |" for row in rows]


Target = tuple[str, str, bool | None]
"""(target, measured, met); met is None when not measured."""


def _metric(summary: Summary, workload: str, system: str, metric: str) -> float | None:
    found = summary.get(workload, {}).get(system, {}).get(metric)
    return float(found) if isinstance(found, int | float) else None


def _speed_targets(summary: Summary, systems: Sequence[str]) -> list[Target]:
    """Drain against the peers, enqueue against LPUSH, bulk enqueue, latency, and
    Redis commands per task."""

    def get(workload: str, metric: str, system: str = "worqr") -> float | None:
        return _metric(summary, workload, system, metric)

    found: list[Target] = []
    peers = [s for s in systems if s not in NOT_PEERS]
    drain = get("drain", "rate")
    best = max(((get("drain", "rate", p) or 0.0, p) for p in peers), default=(0.0, ""))
    if drain is not None and best[0] > 0:
        found.append(
            (
                "drain >= 3x the fastest peer",
                f"{drain:,.0f}/s vs {best[1]} {best[0]:,.0f}/s = {drain / best[0]:.2f}x",
                drain >= 3 * best[0],
            )
        )
    each, raw = get("enqueue", "each_per_s"), get("enqueue", "each_per_s", "raw-list")
    if each is not None and raw:
        found.append(
            (
                "enqueue (one call) >= 80% of redis-py LPUSH",
                f"{each:,.0f}/s vs {raw:,.0f}/s = {each / raw:.0%}",
                each >= 0.8 * raw,
            )
        )
    bulk = get("enqueue", "bulk_per_s")
    if bulk is not None:
        found.append(("bulk enqueue >= 100,000/s", f"{bulk:,.0f}/s", bulk >= 100_000))
    p50, p99 = get("latency", "p50_ms"), get("latency", "p99_ms")
    if p50 is not None and p99 is not None:
        found.append(
            (
                "latency p50 <= 1 ms, p99 <= 5 ms",
                f"p50 {p50:.2f} ms, p99 {p99:.2f} ms",
                p50 <= 1 and p99 <= 5,
            )
        )
    commands = get("cost", "client_commands")
    if commands is not None:
        found.append(("<= 3 Redis commands per task", f"{commands:.2f}", commands <= 3))
    return found


def _scale_targets(summary: Summary) -> list[Target]:
    """Per-op cost deep vs shallow, the mesh's upkeep, and wake-ups per task."""
    found: list[Target] = []
    scale = summary.get("scale", {}).get("worqr", {})
    flat = [
        (op, scale[f"ratio_{op}_server_us"])
        for op in ("enqueue", "dequeue", "finish")
        if isinstance(scale.get(f"ratio_{op}_server_us"), int | float)
    ]
    if flat:
        text = ", ".join(f"{op} {r:.2f}x" for op, r in flat)
        text += " (median of paired windows)"
        found.append(
            (
                f"per-op cost at {int(scale.get('deep', 0)):,} queued within 10% of 10",
                f"server time deep/shallow: {text}",
                all(r <= 1.10 for _, r in flat),
            )
        )
    mesh = scale.get("mesh_redis_core_pct")
    members = int(scale.get("mesh_members", 0))
    if isinstance(mesh, int | float):
        found.append(
            (
                f"heartbeats + reaping of {members:,} workers < 5% of a core",
                f"{mesh:.2f}% of one Redis core",
                mesh < 5,
            )
        )
    herd = sorted(
        (int(key.split("_")[1]), value)
        for key, value in scale.items()
        if key.startswith("wakeups_")
        and key.endswith("_per_task")
        and isinstance(value, int | float)
    )
    if herd:
        found.append(
            (
                "wake-ups per task stay O(1) as idle workers grow",
                ", ".join(f"{per:.2f} with {idle:,} idle" for idle, per in herd),
                all(per <= 1.0 for _, per in herd),
            )
        )
    return found


def _recovery_target(summary: Summary) -> list[Target]:
    recovery = summary.get("recovery", {}).get("worqr", {})
    if "recovered" not in recovery:
        return []
    seconds = recovery.get("seconds")
    return [
        (
            "recovery after SIGKILL <= ttl + heartbeat + 0.5 s (4.5 s)",
            "none" if seconds is None else f"{seconds:.2f} s",
            seconds is not None and seconds <= 4.5,
        )
    ]


def targets(summary: Summary, systems: Sequence[str]) -> list[Target]:
    """The issue's targets: (target, measured, met); met is None when not measured."""
    return [*_speed_targets(summary, systems), *_scale_targets(summary), *_recovery_target(summary)]


def job_targets(summary: Summary, systems: Sequence[str]) -> list[tuple[str, str, bool | None]]:
    """The job layer's drain targets (issue 15), for the sync and the async
    handler each: job drain >= 50% of task drain with the same handler kind, and
    >= 2x the fastest peer's drain (the peers' tasks are their job APIs)."""

    def rate(system: str) -> float | None:
        found = summary.get("drain", {}).get(system, {}).get("rate")
        return float(found) if isinstance(found, int | float) else None

    found: list[tuple[str, str, bool | None]] = []
    peers = [s for s in systems if s not in NOT_PEERS]
    best = max(((rate(p) or 0.0, p) for p in peers), default=(0.0, ""))
    for jobs, tasks in (("worqr-jobs", "worqr"), ("worqr-jobs-async", "worqr-async")):
        ours, theirs = rate(jobs), rate(tasks)
        if ours is None:
            continue
        if theirs:
            found.append(
                (
                    f"{jobs} drain >= 50% of {tasks} (task) drain",
                    f"{ours:,.0f}/s vs {theirs:,.0f}/s = {ours / theirs:.0%}",
                    ours >= 0.5 * theirs,
                )
            )
        if best[0] > 0:
            found.append(
                (
                    f"{jobs} drain >= 2x the fastest peer's",
                    f"{ours:,.0f}/s vs {best[1]} {best[0]:,.0f}/s = {ours / best[0]:.2f}x",
                    ours >= 2 * best[0],
                )
            )
    return found


def _recovery_bars(summary: Summary, systems: Sequence[str]) -> list[tuple[str, float, str]]:
    bars = []
    for system in systems:
        entry = summary.get("recovery", {}).get(system, {})
        if entry.get("recovered") is True and entry.get("seconds") is not None:
            bars.append((system, float(entry["seconds"]), f" {entry['seconds']:.1f} s"))
        elif entry.get("recovered") is False:
            bound = float(entry.get("bound_s", 0))
            bars.append((system, bound, f" none in {bound:g} s"))
    return bars


def chart(summary: Summary, systems: Sequence[str], path: Path, title: str) -> None:
    """One horizontal bar panel per headline figure; worqr in a contrasting colour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [*THROUGHPUT[:4], THROUGHPUT[4], THROUGHPUT[6], *COSTS[:1], *COSTS[2:4], *COSTS[5:7]]
    figure, axes = plt.subplots(4, 3, figsize=(12, 12))
    for axis, column in zip(axes.flat, panels, strict=False):
        bars = [
            (s, number, f" {number:,.{column.digits}f}")
            for s in systems
            if (number := value(summary, column, s)) is not None and not math.isnan(number)
        ]
        better = "higher" if column.higher_is_better else "lower"
        _bars(axis, bars, f"{column.label} ({better} is better)")
    _bars(axes.flat[len(panels)], _recovery_bars(summary, systems), "recovery after SIGKILL, s")
    for axis in list(axes.flat)[len(panels) + 1 :]:
        axis.axis("off")
    figure.suptitle(title, fontsize=11)
    figure.tight_layout()
    figure.savefig(path, dpi=64)
    plt.close(figure)


def _bars(axis: Any, bars: Sequence[tuple[str, float, str]], title: str) -> None:
    axis.set_title(title, fontsize=10)
    if not bars:
        axis.text(0.5, 0.5, "not measured", ha="center", va="center", transform=axis.transAxes)
        axis.set_xticks([])
        axis.set_yticks([])
        return
    names = [name for name, _, _ in bars]
    numbers = [number for _, number, _ in bars]
    colours = [COLOURS.get(name, "#7f7f7f") for name in names]
    axis.barh(names, numbers, color=colours)
    axis.invert_yaxis()
    positive = [n for n in numbers if n > 0]
    if positive and max(positive) / min(positive) > 30:
        axis.set_xscale("log")
    axis.tick_params(labelsize=8)
    for y, (_, number, label) in enumerate(bars):
        axis.text(number, y, label, va="center", fontsize=7)
    axis.margins(x=0.25)
