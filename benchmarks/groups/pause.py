"""Pause: nothing taken after pause() returns; full rate soon after resume()."""

from __future__ import annotations

import argparse
import contextlib
import math
import time
from typing import Any

import redis

import worqr

from ..harness import median, wait_for
from .common import (
    PREFIX,
    WORKERS,
    load,
    submit_flood,
    verdict,
    workers,
)


def _starts(client: worqr.Worqr, queue: str) -> list[float]:
    """Every finished job's ``JobInfo.started``."""
    found: list[float] = []
    cursor: str | None = None
    while True:
        jobs, cursor = client.get_jobs(queue, "finished", limit=1000, cursor=cursor)
        found += [job.started for job in jobs if job.started is not None]
        if cursor is None:
            return found


def _windows(starts: list[float], begin: float, count: int, step: float = 0.1) -> list[int]:
    return [
        sum(1 for s in starts if begin + k * step <= s < begin + (k + 1) * step)
        for k in range(count)
    ]


def _time_to_full(starts: list[float], resumed: float, full: float) -> float:
    """Ms from ``resumed`` to the first 100 ms window (in 10 ms steps) holding
    90% of the full rate's starts."""
    for step in range(0, 3000, 10):
        begin = resumed + step / 1000
        if sum(1 for s in starts if begin <= s < begin + 0.1) >= 0.9 * full:
            return float(step)
    return math.inf


def pause_run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    queue = "pause"
    with workers(url, queue), worqr.Worqr(url, prefix=PREFIX) as client:
        client.pause(queue)
        with contextlib.closing(redis.Redis.from_url(url)) as raw:
            submit_flood(client, raw, queue, args.pause_jobs)
        client.resume(queue)
        time.sleep(args.pause_after)  # full drain
        called = client.server_time()
        client.pause(queue)
        paused = client.server_time()  # after pause returned
        time.sleep(1.0)
        resuming = client.server_time()
        client.resume(queue)
        resumed = client.server_time()
        time.sleep(args.pause_after)
        client.pause(queue)
        wait_for(lambda: client.count_jobs(queue)["active"] == 0, 30)
        left = client.count_jobs(queue)["queued"]
        starts = _starts(client, queue)
    before = _windows(starts, called - 1.0, 10)
    full = median(before)
    return {
        "jobs": args.pause_jobs,
        "started": len(starts),
        "left": left,
        "late": sum(1 for s in starts if paused < s < resuming),
        "between": sum(1 for s in starts if called < s <= paused),
        "last_ms": (max(s for s in starts if s <= paused) - paused) * 1000,
        "pause_ms": (paused - called) * 1000,
        "resume_ms": (resumed - resuming) * 1000,
        "first_ms": (min(s for s in starts if s >= resuming) - resumed) * 1000,
        "full": full,
        "before": before,
        "after": _windows(starts, resumed, 10),
        "to_full_ms": _time_to_full(starts, resumed, full),
    }


def pause(url: str, args: argparse.Namespace) -> None:
    print(f"\n## Pause: {WORKERS} worker processes draining {args.pause_jobs:,} queued jobs")
    print(f"(load average {load()})", flush=True)
    found = pause_run(url, args)
    print("\n| figure | value |")
    print("| --- | ---: |")
    rows = [
        ("jobs started (read back)", f"{found['started']:,}"),
        ("started after pause returned, before resume", f"{found['late']}"),
        ("started while pause was running", f"{found['between']}"),
        ("last start before pause returned, ms", f"{found['last_ms']:.1f}"),
        ("pause call, ms (Redis TIME before/after)", f"{found['pause_ms']:.1f}"),
        ("resume call, ms", f"{found['resume_ms']:.1f}"),
        ("first start after resume returned, ms", f"{found['first_ms']:.1f}"),
        ("full rate: starts per 100 ms (median of the 10 before pause)", f"{found['full']:.0f}"),
        ("starts per 100 ms, the 10 windows before pause", " ".join(map(str, found["before"]))),
        ("starts per 100 ms, the 10 windows after resume", " ".join(map(str, found["after"]))),
        (
            "first 100 ms window at 90% of full rate starts, ms after resume",
            f"{found['to_full_ms']:.0f}",
        ),
        ("jobs still queued at the end", f"{found['left']:,}"),
    ]
    for name, value in rows:
        print(f"| {name} | {value} |")
    met = found["late"] == 0 and found["to_full_ms"] <= 100 and found["left"] > 0
    verdict(
        met,
        f"no job taken after pause returned ({found['late']}); full rate (90%) within "
        f"100 ms of resume: a full window starts {found['to_full_ms']:.0f} ms after it; "
        f"load average {load()}",
    )
