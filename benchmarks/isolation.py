"""Isolated handlers (issue 31): the hard timeout and a leaking handler.

    python -m benchmarks.isolation                  # both
    python -m benchmarks.isolation --only timeout   # how long a stopped child takes to go
    python -m benchmarks.isolation --only leak      # 1,000 jobs keeping 50 MB each

The drain (isolated vs the same worker on threads vs Celery's prefork pool at
the same concurrency) is a workload of the comparison:

    python -m benchmarks.compare --systems worqr-jobs-2,worqr-isolated,celery-prefork-2 \\
        --workloads drain --reps 3

- **timeout**: jobs whose handler sleeps 5 s under a 0.2 s timeout, one at a
  time, 1 s apart (the stopped child's replacement boots meanwhile). Each
  handler reports its child's pid first; the figure is the time from the
  timeout to that child's exit (watched with pidfd where there is one, else
  polled every ms). Target: within 100 ms (plus the grace, unused
  when the handler unwinds on SIGTERM, as a sleeping one does).
- **leak**: 1,000 jobs each keeping 50 MB more in its child, with
  ``max_memory_per_child=200MB`` and concurrency 2. The figure is the peak
  resident memory of the worker process and its children together, sampled
  every 50 ms. Target: bounded (children replaced: never past (slots + the
  spare + one closing) x (limit + one job's 50 MB), plus the worker).

A worker runs in its own process (``worqr worker``), on a throwaway Redis.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import worqr
from worqr.embedded import EmbeddedRedis

from .harness import descendants, median, percentile, python

ROOT = Path(__file__).resolve().parents[1]
APP = "benchmarks.isolation_app:worker"
TIMEOUT_JOBS = 20
SPACING = 1.0  # seconds between the timeout jobs: a replacement child boots in that time
LEAK_JOBS = 1000
LEAK_MB = 50
LEAK_LIMIT = 200 << 20
CONCURRENCY = 2


def start_worker(url: str, *extra: str) -> subprocess.Popen[bytes]:
    command = [python(), "-m", "worqr", "worker", APP, "--url", url, "--log-level", "WARNING"]
    return subprocess.Popen([*command, *extra], cwd=ROOT)


def gone_after(pid: int) -> float:
    """Block until ``pid`` exits; the monotonic time it did."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        try:
            select.select([fd], [], [])
        finally:
            os.close(fd)
        return time.monotonic()
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return time.monotonic()
        time.sleep(0.001)


def bench_timeout(url: str) -> None:
    worker = start_worker(url, "--concurrency", "1")
    delays: list[float] = []
    waited = 0  # jobs whose timeout ran out while they waited for a child
    try:
        with worqr.Worqr(url) as wq:
            for _ in range(TIMEOUT_JOBS):
                ref = wq.submit("sleeper", "5", timeout=0.2, retries=0)

                info = wq.get_job("sleeper", ref.id)
                while info is None or not info.progress:  # its child reports its pid
                    if info is not None and info.state == "failed":
                        break  # timed out before a child took it (none was free)
                    time.sleep(0.001)
                    info = wq.get_job("sleeper", ref.id)
                if not info.progress:
                    waited += 1
                    continue
                assert info.started is not None
                child = int(info.progress)  # type: ignore[arg-type]
                # The timeout falls 0.2 s after the start, by Redis's clock.
                deadline = time.monotonic() + (info.started + 0.2 - wq.server_time())
                delays.append(gone_after(child) - deadline)
                with contextlib.suppress(worqr.JobFailedError):
                    wq.result("sleeper", ref.id, timeout=30)
                time.sleep(SPACING)  # the stopped child's replacement boots meanwhile
    finally:
        worker.terminate()
        worker.wait(30)
    ms = sorted(delay * 1000 for delay in delays)
    print(
        f"timeout: a stopped child is gone {median(ms):.1f} ms after its job's timeout "
        f"(median of {len(ms)}; p90 {percentile(ms, 90):.1f} ms, max {ms[-1]:.1f} ms); "
        f"target: within 100 ms; {waited} of {TIMEOUT_JOBS} jobs timed out waiting for a child"
    )


def resident(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    return total


def bench_leak(url: str) -> None:
    limit = f"{LEAK_LIMIT}B"
    worker = start_worker(url, "--concurrency", str(CONCURRENCY), "--max-memory-per-child", limit)
    peak, samples, stop = [0], [0], threading.Event()

    def sample() -> None:
        while not stop.wait(0.05):
            peak[0] = max(peak[0], resident([worker.pid, *descendants(worker.pid)]))
            samples[0] += 1

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        with worqr.Worqr(url) as wq:
            refs = wq.submit_many("leak", [str(LEAK_MB)] * LEAK_JOBS)
            children = {wq.result("leak", ref.id, timeout=600) for ref in refs}
    finally:
        stop.set()
        sampler.join()
        worker.terminate()
        worker.wait(30)
    seconds = time.monotonic() - started
    # Each child holds at most the limit and one job's memory; there are one per
    # slot, the spare, and one replaced child closing while its successor boots.
    bound = (CONCURRENCY + 2) * (LEAK_LIMIT + (LEAK_MB << 20))
    print(
        f"leak: {LEAK_JOBS} jobs keeping {LEAK_MB} MB each ran in {len(children)} children "
        f"in {seconds:.0f} s; the worker and its children peaked at {peak[0] / 2**20:.0f} MB "
        f"resident ({samples[0]} samples; kept without replacement: "
        f"{LEAK_JOBS * LEAK_MB / 1024:.0f} GB); bound (slots + spare + one closing) x "
        f"(limit + one job): {bound / 2**20:.0f} MB plus the worker"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("timeout", "leak"))
    args = parser.parse_args()
    with EmbeddedRedis() as server:
        if args.only in (None, "timeout"):
            bench_timeout(server.url)
        if args.only in (None, "leak"):
            bench_leak(server.url)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
