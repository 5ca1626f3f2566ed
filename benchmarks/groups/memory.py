"""Memory: keys and used_memory after a million groups used once and drained."""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import redis

import worqr

from ..harness import wait_for
from .common import (
    PREFIX,
    ROUND,
    load,
    submit_groups,
    verdict,
    workers,
)

MEMORY_FIELDS = (
    "used_memory",
    "used_memory_dataset",
    "used_memory_overhead",
    "used_memory_scripts",
)


def _memory(probe: redis.Redis) -> dict[str, int]:
    """INFO memory's figures, and MEMORY STATS' keyspace tables and clients."""
    info = probe.info("memory")
    stats = probe.memory_stats()
    db = stats.get("db.0", {})
    return {
        **{name: int(info.get(name, 0)) for name in MEMORY_FIELDS},
        "keyspace tables": int(db.get("overhead.hashtable.main", 0))
        + int(db.get("overhead.hashtable.expires", 0)),
        "clients": int(stats.get("clients.normal", 0)),
    }


def _settled(client: worqr.Worqr, probe: redis.Redis, queue: str) -> dict[str, int]:
    """DBSIZE and INFO memory's figures once the queue holds no job (records
    purged) and DBSIZE has held still for 2 s."""
    wait_for(lambda: not any(client.count_jobs(queue).values()), 900, 0.2)
    last = -1
    while True:
        size = int(probe.dbsize())
        if size == last:
            return {"keys": size, **_memory(probe)}
        last = size
        time.sleep(2.0)


def _cycle(
    client: worqr.Worqr, probe: redis.Redis, queue: str, names: list[str]
) -> tuple[dict[str, int], dict[str, int], float]:
    """One job per group of ``names``, all queued at once (submitted while the
    queue is paused), then resumed and drained: the figures with every group
    queued, once settled after, and the seconds it took."""
    start = time.perf_counter()
    client.pause(queue)
    for first in range(0, len(names), 10 * ROUND):
        submit_groups(client, probe, queue, names[first : first + 10 * ROUND], result_ttl=0)
    memory = probe.info("memory")
    peak = {"keys": int(probe.dbsize()), "used_memory": int(memory["used_memory"])}
    client.resume(queue)
    return peak, _settled(client, probe, queue), time.perf_counter() - start


def memory_run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    queue, total = "memory", args.memory_groups
    probe = redis.Redis.from_url(url)
    with workers(url, queue), worqr.Worqr(url, prefix=PREFIX) as client:
        client.submit(queue, "x", group="warm", result_ttl=0)  # loads the script
        # A first small cycle loads every script it calls: what is measured is
        # what groups leave behind, not the script cache.
        _cycle(client, probe, queue, [f"warm-{i}" for i in range(100)])
        keys_before = set(probe.scan_iter(count=1000))
        before = _settled(client, probe, queue)
        peak, after, seconds = _cycle(client, probe, queue, [f"t-{i}" for i in range(total)])
        extra = sorted(set(probe.scan_iter(count=1000)) - keys_before)[:10]
    probe.close()
    return {
        "groups": total,
        "before": before,
        "after": after,
        "peak": peak,
        "seconds": seconds,
        "extra": [key.decode(errors="replace") for key in extra],
    }


def memory(url: str, args: argparse.Namespace) -> None:
    print(f"\n## Memory: {args.memory_groups:,} distinct groups used once each, drained")
    print(f"(load average {load()})", flush=True)
    found = memory_run(url, args)
    before, after, peak = found["before"], found["after"], found["peak"]
    print(
        f"\nsubmitted (the queue paused), resumed and drained in {found['seconds']:.1f} s; "
        f"with every group queued: DBSIZE {peak['keys']:,}, used_memory "
        f"{peak['used_memory'] / 2**20:,.1f} MB\n"
    )
    print("| figure | before | after | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for name in before:
        ratio = after[name] / before[name] if before[name] else math.nan
        print(f"| {name} | {before[name]:,} | {after[name]:,} | {ratio:.3f}x |")
    if found["extra"]:
        print(f"\nkeys after that were not there before (first 10): {found['extra']}")
    keys = after["keys"] / before["keys"]
    used = after["used_memory"] / before["used_memory"]
    verdict(
        keys <= 1.1 and used <= 1.1,
        f"key count and used_memory after {found['groups']:,} groups within 1.1x of before: "
        f"{keys:.3f}x keys, {used:.3f}x used_memory; load average {load()}",
    )
