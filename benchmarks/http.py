"""The HTTP API: submits per second from one client, and submit-to-start latency.

    python -m benchmarks.http                           # 3,000 submits, 500 latency samples
    python -m benchmarks.http --submits 200 --samples 50   # a smoke run

Starts its own redis-server (or uses ``--url``), a real `worqr http` process
on a free loopback port (no access log), and one `worqr.Worker` in this
process with a no-op handler.

Submits per second: ``--submits`` `POST /v1/queues/bench-submit/jobs`, one
after another on one keep-alive connection (httpx), to a queue no worker
serves: the round trip of one HTTP request and one submit script.

Submit to start: ``--samples`` jobs, one at a time, on the worker's queue: the
time from just before the POST to the handler's start (both `time.monotonic()`
in this process), so it holds the HTTP round trip, the submit, the wake-up
and the take. Prints p50/p99/max.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx

import worqr
from worqr.embedded import EmbeddedRedis


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@contextlib.contextmanager
def http_server(url: str, prefix: str) -> Iterator[str]:
    """A `worqr http` process; yields its base URL."""
    command = [sys.executable, "-m", "worqr", "http", "--port", "0", "--no-access-log"]
    command += ["--url", url, "--prefix", prefix, "--log-level", "warning"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env={**os.environ})
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        if not line.startswith("worqr http: serving on "):
            raise RuntimeError(f"worqr http did not start: {line!r}")
        # Keep reading its stdout so that a full pipe never stalls it.
        threading.Thread(target=process.stdout.read, daemon=True).start()
        yield line.split()[4]
    finally:
        process.terminate()
        process.wait(15)


def submits_per_second(http: httpx.Client, count: int) -> float:
    for n in range(min(100, count)):  # warm up the connection and the scripts
        http.post("/v1/queues/bench-warm/jobs", json={"payload": str(n)}).raise_for_status()
    start = time.perf_counter()
    for n in range(count):
        answer = http.post("/v1/queues/bench-submit/jobs", json={"payload": f"job-{n}"})
        if answer.status_code != 201:
            raise RuntimeError(f"submit answered {answer.status_code}: {answer.text}")
    return count / (time.perf_counter() - start)


def submit_to_start(http: httpx.Client, worker: worqr.Worker, samples: int) -> list[float]:
    started: dict[str, float] = {}
    arrived = threading.Event()

    @worker.job("bench-latency", retries=0)
    def handler(payload: str) -> None:
        started[payload] = time.monotonic()
        arrived.set()

    runner = threading.Thread(target=worker.run, daemon=True)
    runner.start()
    if not worker.wait_started(15):
        raise RuntimeError("the worker did not start")
    latencies = []
    try:
        for n in range(samples + 10):  # the first 10 warm up
            arrived.clear()
            sent = time.monotonic()
            answer = http.post("/v1/queues/bench-latency/jobs", json={"payload": str(n)})
            answer.raise_for_status()
            if not arrived.wait(10):
                raise RuntimeError(f"job {n} did not start within 10 s")
            if n >= 10:
                latencies.append(started[str(n)] - sent)
    finally:
        worker.stop(now=True)
        runner.join(15)
    return latencies


def run(url: str, submits: int, samples: int) -> None:
    prefix = f"bench-http-{time.time_ns()}"
    worker = worqr.Worker(url, prefix=prefix, concurrency=8)
    with http_server(url, prefix) as base, httpx.Client(base_url=base, timeout=30) as http:
        rate = submits_per_second(http, submits)
        latencies = submit_to_start(http, worker, samples)
    ms = [value * 1000 for value in latencies]
    print(f"worqr http, one client (httpx, keep-alive), Python {sys.version.split()[0]}")
    print(f"submits per second over HTTP: {rate:,.0f} ({submits:,} sequential POSTs)")
    print(
        f"submit -> start through HTTP: p50 {quantile(ms, 0.5):.2f} ms, "
        f"p99 {quantile(ms, 0.99):.2f} ms, max {max(ms):.2f} ms, "
        f"mean {statistics.fmean(ms):.2f} ms ({len(ms)} jobs, one at a time)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="use this Redis (default: start a throwaway one)")
    parser.add_argument("--submits", type=int, default=3000)
    parser.add_argument("--samples", type=int, default=500)
    args = parser.parse_args()
    if args.url:
        run(args.url, args.submits, args.samples)
        return
    with EmbeddedRedis() as server:
        run(server.url, args.submits, args.samples)


if __name__ == "__main__":
    main()
