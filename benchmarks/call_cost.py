"""What one worker call costs the worker's own process: the take that finishes
the last batch and takes the next (`complete` for tasks, `job_take` for jobs),
sent back to back by one asyncio client, as a worker's puller sends it.

    python -m benchmarks.call_cost [--tasks 20000] [--batch 1 8]

Starts its own redis-server. Prints, per call and per task, the client's CPU
(``time.process_time``: packing, parsing, the client's plan and asyncio) and
the wall time, and Redis's CPU per task. Batch 1 is a worker under a trickle
of work (one task per wake-up); batch 8 is a worker's default concurrency.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import redis

import worqr
from worqr.embedded import EmbeddedRedis

from .harness import version_of


def _redis_cpu(raw: redis.Redis) -> float:
    cpu: dict[str, Any] = raw.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


async def _drain(url: str, kind: str, total: int, batch: int) -> tuple[int, float, float]:
    """Calls made, client CPU seconds and wall seconds to drain ``total``."""
    async with worqr.AsyncWorqr(url, prefix=f"cost-{kind}-{batch}") as client:
        if kind == "jobs":
            await client.submit_many("q", ["x"] * total)
        else:
            await client.enqueue_many("q", ["x"] * total)
        await client.start_worker()
        await client.start_work("q")
        held: list[Any] = []
        calls = 0
        cpu, wall = time.process_time(), time.perf_counter()
        while True:
            if kind == "jobs":
                _, held, _ = await client.internals.take_jobs(
                    "q", [(p, "n", b"") for p in held], batch
                )
            else:
                _, held = await client.complete("q", held, batch)
            calls += 1
            if not held:
                break
        return calls, time.process_time() - cpu, time.perf_counter() - wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.call_cost")
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    args = parser.parse_args(argv)
    print(
        f"redis-py {version_of('redis')}, hiredis {version_of('hiredis')}, "
        f"worqr {version_of('worqr')}; {args.tasks:,} tasks or jobs per row"
    )
    print("| kind | batch | client CPU µs/call | µs/task | wall µs/call | Redis CPU µs/task |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with EmbeddedRedis() as server:
        raw = redis.Redis.from_url(server.url)
        for kind in ("tasks", "jobs"):
            for batch in args.batch:
                before = _redis_cpu(raw)
                calls, cpu, wall = asyncio.run(_drain(server.url, kind, args.tasks, batch))
                redis_cpu = _redis_cpu(raw) - before
                print(
                    f"| {kind} | {batch} | {cpu / calls * 1e6:,.1f} | "
                    f"{cpu / args.tasks * 1e6:,.1f} | {wall / calls * 1e6:,.1f} | "
                    f"{redis_cpu / args.tasks * 1e6:,.1f} |"
                )
        raw.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
