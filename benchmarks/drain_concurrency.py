"""Drain rate of `worqr.Worker` by handler kind and ``concurrency``.

    python -m benchmarks.drain_concurrency                 # sync/async x 8/16, 20,000 tasks
    python -m benchmarks.drain_concurrency --tasks 200 --reps 1

Starts its own redis-server. Each run starts W = 2 worker processes at once; each
drains its own queue of ``--tasks`` pre-queued no-op tasks and reports its rate
from first to last handler start; the figure is the sum. A worker dequeues up to
its free slots in one script call, so ``concurrency`` is also its batch size:
the lever for short sync handlers, whose per-task hand-off to a thread costs
more than an async handler's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time

import worqr
from worqr.embedded import EmbeddedRedis

WORKERS = 2
QUEUE = "drain"


def drain(url: str, prefix: str, tasks: int, concurrency: int, kind: str) -> None:
    """One worker process: fill its queue, drain it, print 'rate cpu_us'."""
    worqr.Worqr(url, prefix=prefix).enqueue_many(QUEUE, [f"{i:020d}" for i in range(tasks)])
    worker = worqr.Worker(url, prefix=prefix, concurrency=concurrency)
    starts: list[float] = []
    lock = threading.Lock()

    def note() -> None:
        with lock:
            starts.append(time.perf_counter())
            if len(starts) == tasks:
                worker.stop()

    if kind == "async":

        @worker.handler(QUEUE)
        async def run_async(task: str) -> None:
            note()

    else:

        @worker.handler(QUEUE)
        def run_sync(task: str) -> None:
            note()

    cpu = time.process_time()
    worker.run()
    rate = (tasks - 1) / (starts[-1] - starts[0]) if tasks > 1 else 0.0
    print(f"{rate:.1f} {(time.process_time() - cpu) / tasks * 1e6:.1f}")


def run(url: str, tasks: int, concurrency: int, kind: str, rep: int) -> tuple[float, float]:
    command = [sys.executable, "-m", __spec__.name if __spec__ else __name__, "--child"]
    children = [
        subprocess.Popen(
            [
                *command,
                url,
                f"bench{rep}-{kind}{concurrency}-{i}",
                str(tasks),
                str(concurrency),
                kind,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(WORKERS)
    ]
    figures = []
    for child in children:
        out, _ = child.communicate(timeout=300)
        if child.returncode != 0:
            raise SystemExit(f"a worker process failed (exit {child.returncode})")
        rate, cpu = out.split()
        figures.append((float(rate), float(cpu)))
    return sum(r for r, _ in figures), statistics.mean(c for _, c in figures)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        url, prefix, tasks, concurrency, kind = sys.argv[2:7]
        drain(url, prefix, int(tasks), int(concurrency), kind)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20_000, help="per worker process")
    parser.add_argument("--reps", type=int, default=3, help="alternating repetitions")
    parser.add_argument("--concurrency", default="8,16", help="comma-separated")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    with EmbeddedRedis() as server:
        for rep in range(args.reps):
            for kind in ("sync", "async"):
                for concurrency in levels:
                    figure = run(server.url, args.tasks, concurrency, kind, rep)
                    results.setdefault((kind, concurrency), []).append(figure)
    print(f"drain, W = {WORKERS} processes x {args.tasks:,} no-op tasks, medians of {args.reps}:")
    print("| handler | concurrency | drain/s (sum) | worker CPU µs/task |")
    print("| --- | ---: | ---: | ---: |")
    for (kind, concurrency), figures in results.items():
        rate = statistics.median(r for r, _ in figures)
        cpu = statistics.median(c for _, c in figures)
        print(f"| {kind} | {concurrency} | {rate:,.0f} | {cpu:.0f} |")


if __name__ == "__main__":
    main()
