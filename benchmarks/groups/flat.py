"""Flat cost: submit and take Redis time at 10 and at many groups, capped or not."""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable

import redis

import worqr
from worqr._jobs import JobProcess

from ..delayed import _script_usec
from ..harness import median
from .common import (
    PREFIX,
    load,
    submit_groups,
    verdict,
)


class Flat:
    """One queue of the flat-cost part and its two operations."""

    def __init__(self, client: worqr.Worqr, queue: str, groups: int) -> None:
        self.client = client
        self.queue = queue
        self.groups = groups
        self.held: JobProcess | None = None

    def submit(self, i: int) -> None:
        self.client.submit(self.queue, "x", group=f"g{i % self.groups}")

    def take(self, i: int) -> None:
        """A worker's call: finish the job it holds, take the next one."""
        finished = [] if self.held is None else [(self.held, "n", b"")]
        _, taken, _ = self.client.internals.take_jobs(self.queue, finished, 1)
        self.held = taken[0] if taken else None


def _fill_flat(client: worqr.Worqr, raw: redis.Redis, args: argparse.Namespace) -> dict[str, Flat]:
    many, depth = args.groups, args.ops * args.rounds + 100
    queues = {
        "10": Flat(client, "flat-10", 10),
        "many": Flat(client, "flat-many", many),
        "10, cap 1": Flat(client, "flat-10-cap", 10),
        "many, cap 1": Flat(client, "flat-many-cap", many),
    }
    start = time.perf_counter()
    capped = [f"g{i}" for i in range(10, many)]  # in flat-many-cap, all but g0..g9 reach it
    client.configure_queue("flat-10-cap", group_max_active=1)
    client.configure_queue("flat-many-cap", group_max_active=1)
    client.submit("flat-many", "x", group="g0")  # loads the script (pipelines need it)
    submit_groups(client, raw, "flat-many", (f"g{i}" for i in range(1, many)))
    submit_groups(client, raw, "flat-many-cap", capped, jobs=2)
    taken = 0
    while True:
        _, jobs, _ = client.internals.take_jobs("flat-many-cap", [], 1000)
        taken += len(jobs)
        if not jobs:
            break
    for flat in queues.values():
        if flat.queue != "flat-many":
            submit_groups(client, raw, flat.queue, (f"g{i}" for i in range(10)), jobs=depth)
    print(
        f"(filled in {time.perf_counter() - start:.1f} s; {taken:,} jobs taken and held "
        f"in flat-many-cap, one per capped group)",
        flush=True,
    )
    return queues


def _flat_window(probe: redis.Redis, flat: Flat, ops: int) -> dict[str, float]:
    found: dict[str, float] = {}
    operations: dict[str, Callable[[int], None]] = {"submit": flat.submit, "take": flat.take}
    for name, op in operations.items():
        probe.config_resetstat()
        times = []
        for i in range(ops):
            start = time.perf_counter()
            op(i)
            times.append(time.perf_counter() - start)
        usec, scripts, others = _script_usec(probe)
        found[f"{name}_server_us"] = usec / ops
        found[f"{name}_commands"] = others / ops
        found[f"{name}_client_us"] = median(times) * 1e6
        found[f"{name}_scripts"] = scripts / ops
    return found


def flat(url: str, args: argparse.Namespace) -> None:
    print(f"\n## Flat cost: 10 groups against {args.groups:,} groups with queued jobs")
    print(f"(load average {load()}; filling...)", flush=True)
    probe = redis.Redis.from_url(url)
    client = worqr.Worqr(url, prefix=PREFIX)
    samples: dict[str, list[float]] = defaultdict(list)
    try:
        client.start_worker()
        queues = _fill_flat(client, probe, args)
        for _ in range(args.rounds):
            for label, queue in queues.items():
                for name, value in _flat_window(probe, queue, args.ops).items():
                    samples[f"{label}|{name}"].append(value)
        counts = {label: client.count_jobs(q.queue) for label, q in queues.items()}
    finally:
        client.close()
        probe.close()
    _print_flat(samples, counts, args)


def _ratio(samples: dict[str, list[float]], over: str, under: str, key: str) -> float:
    pairs = zip(samples[f"{over}|{key}"], samples[f"{under}|{key}"], strict=True)
    return median([a / b for a, b in pairs if b > 0])


def _print_flat(
    samples: dict[str, list[float]], counts: dict[str, dict[str, int]], args: argparse.Namespace
) -> None:
    many = f"{args.groups:,}"
    print(
        f"\n{args.ops} calls of each per window, {args.rounds} windows per queue; "
        "Redis µs: script calls' usec (EVALSHA or FCALL) per call (scripts' commands "
        "included); medians of windows\n"
    )
    print("| queue | op | Redis µs | ratio | commands/call | client µs | ratio | queued | active |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    pairs = {"10": "10", "many": "10", "10, cap 1": "10, cap 1", "many, cap 1": "10, cap 1"}
    worst = 0.0
    for label, base in pairs.items():
        for op in ("submit", "take"):
            server = _ratio(samples, label, base, f"{op}_server_us")
            client = _ratio(samples, label, base, f"{op}_client_us")
            if label != base:
                worst = max(worst, server)
            name = label.replace("many", many)
            print(
                f"| {name} groups | {op} | {median(samples[f'{label}|{op}_server_us']):.1f} | "
                f"{server:.2f}x | {median(samples[f'{label}|{op}_commands']):.1f} | "
                f"{median(samples[f'{label}|{op}_client_us']):.0f} | {client:.2f}x | "
                f"{counts[label]['queued']:,} | {counts[label]['active']:,} |"
            )
    plain = _ratio(samples, "many, cap 1", "10", "take_server_us")
    print(f"\n(take at {many} groups, all but 10 capped, against 10 uncapped groups: {plain:.2f}x)")
    verdict(
        worst <= 1.5,
        f"submit and take Redis time at {many} groups (and with all but 10 at their cap) "
        f"within 1.5x of 10 groups: worst {worst:.2f}x; load average {load()}",
    )
