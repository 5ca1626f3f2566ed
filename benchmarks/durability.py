"""What WAIT durability costs: enqueues/s with and without ``wait_replicas=1``.

Runs on the test suite's Sentinel setup (a master, one replica, three
sentinels, all real redis-server processes on loopback) and connects through
the sentinels, as a producer would in production:

    python -m benchmarks.durability [--tasks 3000] [--repeat 3]

Reports the median of ``--repeat`` alternating runs of each mode: one task per
``enqueue`` call (a round trip each), and ``enqueue_many`` of 1,000-task
batches (one WAIT per batch).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import worqr
from tests.support.sentinel import SentinelGroup
from tests.support.server_versions import describe

LATENCIES: dict[int, list[float]] = {0: [], 1: []}  # single enqueue call, seconds


def _rate(group: SentinelGroup, wait: int, tasks: int, bulk: bool) -> float:
    settings = worqr.Settings(prefix=f"b{uuid.uuid4().hex[:8]}", wait_replicas=wait)
    with worqr.Worqr(
        sentinels=group.addresses, service_name=group.service, settings=settings
    ) as wq:
        wq.enqueue("warm", "x")  # connect, load the script
        payloads = [f"task-{i}" for i in range(tasks)]
        started = time.perf_counter()
        if bulk:
            wq.enqueue_many("q", payloads)
        else:
            for payload in payloads:
                before = time.perf_counter()
                wq.enqueue("q", payload)
                LATENCIES[wait].append(time.perf_counter() - before)
        elapsed = time.perf_counter() - started
        wq.delete_queue("q")
        wq.delete_queue("warm")
    return tasks / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=3000, help="tasks per single-call run")
    parser.add_argument("--bulk-tasks", type=int, default=50_000, help="tasks per bulk run")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    group = SentinelGroup().start()
    try:
        print(f"server: {describe(group.binary)}; master + 1 replica + 3 sentinels on loopback")
        results: dict[tuple[str, int], list[float]] = {}
        for _ in range(args.repeat):
            for bulk in (False, True):
                for wait in (0, 1):
                    tasks = args.bulk_tasks if bulk else args.tasks
                    mode = "enqueue_many" if bulk else "enqueue"
                    results.setdefault((mode, wait), []).append(_rate(group, wait, tasks, bulk))
        print(f"{'mode':<14} {'wait_replicas':>13} {'tasks/s (median)':>17} {'runs':>30}")
        for (mode, wait), rates in results.items():
            runs = ", ".join(f"{r:,.0f}" for r in rates)
            print(f"{mode:<14} {wait:>13} {statistics.median(rates):>17,.0f} {runs:>30}")
        for wait, samples in LATENCIES.items():
            cuts = statistics.quantiles(samples, n=100)
            print(
                f"enqueue latency, wait_replicas={wait}: p50 {cuts[49] * 1e6:,.0f} us, "
                f"p99 {cuts[98] * 1e6:,.0f} us"
            )
        for mode in ("enqueue", "enqueue_many"):
            plain = statistics.median(results[(mode, 0)])
            durable = statistics.median(results[(mode, 1)])
            print(f"{mode}: wait_replicas=1 runs at {durable / plain:.0%} of the plain rate")
    finally:
        group.close()


if __name__ == "__main__":
    main()
