"""Flows: how long a hop takes, and what a fan-in of many children costs.

    python -m benchmarks.flows                         # 1,000 chains, 1,000 children
    python -m benchmarks.flows --chains 20 --children 50   # a smoke run

Starts its own redis-server (or uses ``--url``) and one `worqr.Worker` in this
process (``--concurrency`` handler slots, no-op handlers).

Hop latency: ``--chains`` two-step chains (queues ``hop-a`` then ``hop-b``),
submitted one at a time. The first step's handler notes ``time.monotonic()``
as it returns; the second notes it as it starts. The hop, finish of a step to
start of the next, is the difference: the finish riding on the worker's next
take, the outbox entry written by that same script, the relay (a
`job_flow_submit` in the next queue's slot and an ack), the wake-up and the
next take. Prints p50/p99/max.

Fan-in: one `submit_flow` of a parent (queue ``fan-parent``) with ``--children``
children (queue ``fan-child``). Prints the wall time from submit to the
parent's start, and the Redis server time (``INFO commandstats``, usec of
every command, scripts included) and commands per child.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import threading
import time
from typing import Any

import redis

import worqr
from worqr.embedded import EmbeddedRedis


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def server_usec(client: redis.Redis) -> tuple[float, int]:
    stats: dict[str, Any] = client.info("commandstats")
    usec = sum(float(v["usec"]) for v in stats.values())
    calls = sum(int(v["calls"]) for v in stats.values())
    return usec, calls


def run(url: str, chains: int, children: int, concurrency: int) -> None:
    prefix = f"bench-flows-{time.time_ns()}"
    worker = worqr.Worker(url, prefix=prefix, concurrency=concurrency)
    ended: dict[str, float] = {}
    started: dict[str, float] = {}
    parent_started = threading.Event()

    @worker.job("hop-a")
    def hop_a(payload: str) -> str:
        ended[worqr.current_job().id.rpartition(".")[0]] = time.monotonic()
        return payload

    @worker.job("hop-b")
    def hop_b(payload: str) -> None:
        started[worqr.current_job().id.rpartition(".")[0]] = time.monotonic()

    @worker.job("fan-child")
    def child(payload: str) -> str:
        return payload

    @worker.job("fan-parent")
    def parent(payload: str) -> str:
        parent_started.set()
        return str(len(worqr.current_job().children()))

    runner = threading.Thread(target=worker.run, daemon=True)
    runner.start()
    worker.wait_started(15)
    raw = redis.Redis.from_url(url)
    try:
        with worqr.Worqr(url, prefix=prefix) as wq:
            for n in range(chains):
                flow = wq.submit_chain([worqr.Step("hop-a", str(n)), worqr.Step("hop-b")])
                deadline = time.monotonic() + 30
                while flow.id not in started and time.monotonic() < deadline:
                    time.sleep(0.0005)
            hops = [(started[k] - ended[k]) * 1000 for k in started if k in ended]
            print(f"hop latency, {len(hops)} of {chains} chains (step finish to next start):")
            print(
                f"  p50 {quantile(hops, 0.5):.2f} ms  p99 {quantile(hops, 0.99):.2f} ms  "
                f"max {max(hops):.2f} ms  mean {statistics.fmean(hops):.2f} ms"
            )
            before_usec, before_calls = server_usec(raw)
            begin = time.monotonic()
            kids = [worqr.FlowJob("fan-child", str(i)) for i in range(children)]
            flow = wq.submit_flow(worqr.FlowJob("fan-parent", "all", children=kids))
            parent_started.wait(120)
            wall = time.monotonic() - begin
            result = wq.result("fan-parent", flow.id, timeout=60)
            usec, calls = server_usec(raw)
            print(f"fan-in of {children} children (result {result}):")
            print(
                f"  {wall * 1000:.0f} ms from submit to the parent's start; Redis "
                f"{(usec - before_usec) / children:.1f} usec and "
                f"{(calls - before_calls) / children:.1f} commands per child"
            )
    finally:
        raw.close()
        worker.stop()
        runner.join(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a Redis to use (default: start a redis-server)")
    parser.add_argument("--chains", type=int, default=1000)
    parser.add_argument("--children", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        url = args.url or stack.enter_context(EmbeddedRedis()).url
        run(url, args.chains, args.children, args.concurrency)


if __name__ == "__main__":
    main()
