"""Fairness: tenant A's flood against tenants B-K's start delays (see the package's doc)."""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import redis

import worqr

from ..harness import wait_for
from .common import (
    PREFIX,
    TENANTS,
    load,
    read_starts,
    stats,
    submit_flood,
    verdict,
    workers,
)


class Tenants(threading.Thread):
    """Tenants B-K: each submits one job every 100 ms, 10 ms after the one before."""

    def __init__(self, url: str, queue: str, grouped: bool) -> None:
        super().__init__(daemon=True)
        self.client = worqr.Worqr(url, prefix=PREFIX)
        self.queue = queue
        self.grouped = grouped
        self.ids: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        tick = 0
        while not self.halt.is_set():
            pause = start + tick * 0.01 - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            tenant = TENANTS[tick % len(TENANTS)]
            group = tenant if self.grouped else None
            self.ids.append(self.client.submit(self.queue, f"r:{tenant}", group=group).id)
            tick += 1

    def finish(self) -> list[str]:
        self.halt.set()
        self.join(10)
        self.client.close()
        return self.ids


def _flood_queued(url: str, client: worqr.Worqr, queue: str, flood: int, grouped: bool) -> None:
    """Tenant A's flood, all queued at once: filled while held, then released."""
    if grouped:
        client.pause(queue, group="A")
    else:
        client.pause(queue)
    with contextlib.closing(redis.Redis.from_url(url)) as raw:
        client.submit(queue, "x", group="A" if grouped else None)  # loads the script
        submit_flood(client, raw, queue, flood - 1, group="A" if grouped else None)
    if grouped:
        client.resume(queue, group="A")
    else:
        client.resume(queue)


class Delays:
    """B-K's start delays, read while the run goes on: a queue keeps at most
    100,000 terminal jobs (`JobSettings.max_retained`), so after a flood the
    earliest small jobs' records are purged 10 s after they end."""

    def __init__(self, client: worqr.Worqr, queue: str, records: Path) -> None:
        self.client, self.queue, self.records = client, queue, records
        self.handler: dict[str, float] = {}
        self.taken: dict[str, float] = {}

    def collect(self, ids: list[str]) -> None:
        """Read the jobs of ``ids`` that started since the last call."""
        starts = read_starts(self.records)
        for id in ids:
            if id in self.taken or id not in starts:
                continue
            info = self.client.get_job(self.queue, id)
            if info is not None and info.started is not None:
                self.handler[id] = (starts[id] - info.created) * 1000
                self.taken[id] = (info.started - info.created) * 1000


def fairness_run(url: str, queue: str, flood: int, grouped: bool, seconds: float) -> dict[str, Any]:
    """One run: the flood (if any), B-K for ``seconds`` at least and until the
    flood is drained; their start delays."""
    with workers(url, queue) as records, worqr.Worqr(url, prefix=PREFIX) as client:
        if flood:
            _flood_queued(url, client, queue, flood, grouped)
        began = time.monotonic()
        tenants = Tenants(url, queue, grouped)
        tenants.start()
        delays = Delays(client, queue, records)

        def going() -> bool:  # B-K run ``seconds`` at least, and until the flood is drained
            flooded = client.count_jobs(queue)["queued"] > len(TENANTS)
            return time.monotonic() - began < seconds or flooded

        while going():
            if time.monotonic() - began > 900:
                raise SystemExit("the flood was not drained in 900 s")
            delays.collect(list(tenants.ids))
            time.sleep(0.5)
        elapsed = time.monotonic() - began
        ids = tenants.finish()
        wait_for(lambda: set(ids) <= set(read_starts(records)), 60)
        delays.collect(ids)
    return {
        "flood": flood,
        "grouped": grouped,
        "seconds": elapsed,
        "submitted": len(ids),
        "handler": stats(list(delays.handler.values())),
        "taken": stats(list(delays.taken.values())),
    }


def fairness(url: str, args: argparse.Namespace) -> None:
    print(f"\n## Fairness: tenant A floods {args.flood:,} jobs, B-K one job each per 100 ms")
    print(f"(load average {load()})", flush=True)
    runs = {"flood, groups": fairness_run(url, "fair-groups", args.flood, True, 2.0)}
    seconds = runs["flood, groups"]["seconds"]
    runs["no flood, groups"] = fairness_run(url, "fair-alone", 0, True, seconds)
    runs["flood, no groups (FIFO)"] = fairness_run(url, "fair-fifo", args.flood, False, 2.0)
    print(
        "\n| run | B-K jobs | run s | handler start - created p50 ms | p99 | max | "
        "taken - created p50 ms | p99 | max |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, run in runs.items():
        h, t = run["handler"], run["taken"]
        print(
            f"| {name} | {h['n']:,} of {run['submitted']:,} | {run['seconds']:.1f} | "
            f"{h['p50']:.2f} | {h['p99']:.2f} | {h['max']:.2f} | {t['p50']:.2f} | "
            f"{t['p99']:.2f} | {t['max']:.2f} |"
        )
    flood, alone = runs["flood, groups"], runs["no flood, groups"]
    taken = flood["taken"]["p99"] / alone["taken"]["p99"]
    handler = flood["handler"]["p99"] / alone["handler"]["p99"]
    verdict(  # the start: the take (JobInfo.started), take-ahead included
        taken <= 2.0,
        f"B-K start delay (JobInfo.started - created) p99 with A's flood within 2x of "
        f"without: {taken:.2f}x ({flood['taken']['p99']:.2f} vs {alone['taken']['p99']:.2f} "
        f"ms); handler start - created {handler:.2f}x ({flood['handler']['p99']:.2f} vs "
        f"{alone['handler']['p99']:.2f} ms); load average {load()}",
    )
