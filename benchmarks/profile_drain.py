"""Where a worqr worker's time goes while it drains a queue.

    python -m benchmarks.profile_drain [--tasks 30000] [--workers 2] [--rate 250]
    python -m benchmarks.profile_drain --handler jobs      # @worker.job handlers, submit_many

Starts its own redis-server, queues N no-op tasks, runs the benchmark's worqr
workers under ``py-spy record`` (non-blocking sampling), and prints per-task
figures (wall, worker CPU, Redis CPU, commands) and the top functions by own
and by inclusive samples. Needs py-spy (``pip install py-spy``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from worqr.embedded import EmbeddedRedis

from .adapters.worqr_bench import (
    WorqrAdapter,
    WorqrAsyncAdapter,
    WorqrJobsAdapter,
    WorqrJobsAsyncAdapter,
)
from .harness import Probe, Records, Workers, cpu_seconds, descendants, python
from .record import index_arg
from .workloads import ROOT

RESULTS = Path(__file__).resolve().parent / "results"


def _frame(frame: str) -> str:
    """'func (path/to/file.py:12)' -> 'func (file.py)': group a function's lines."""
    name, _, where = frame.partition(" (")
    return f"{name} ({Path(where.rsplit(':', 1)[0]).name})" if where else name


@dataclass
class Profile:
    total: int  # samples of the steady state
    startup: int  # samples spent importing (start-up), left out of the tops
    own: list[tuple[str, int]]
    inclusive: list[tuple[str, int]]


def top_frames(raw: str, limit: int) -> Profile:
    """The top functions by own and by inclusive samples, start-up excluded."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = startup = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        if "_find_and_load" in stack:
            startup += count
            continue
        frames = [_frame(f) for f in stack.split(";")]
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
    return Profile(total, startup, own.most_common(limit), inclusive.most_common(limit))


def _worker_pids(workers: Workers) -> list[int]:
    """The worker processes, without the py-spy processes above them."""
    pids = []
    for process in workers.processes:
        pids += [pid for pid in descendants(process.pid) if pid != process.pid]
    return pids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_drain")
    parser.add_argument("--tasks", type=int, default=30000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--handler",
        choices=("sync", "async", "raw", "jobs", "jobs-async"),
        default="sync",
        help="task handlers (sync, async, raw client loop) or job handlers (@worker.job)",
    )
    parser.add_argument(
        "--wall",
        action="store_true",
        help="sample every non-idle thread (waits on sockets count) instead of GIL holders",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    spy = shutil.which("py-spy") or str(Path(python()).with_name("py-spy"))
    workdir = Path(tempfile.mkdtemp(prefix="worqr-profile-"))
    records = Records(workdir / "records")
    adapter = {
        "async": WorqrAsyncAdapter,
        "jobs": WorqrJobsAdapter,
        "jobs-async": WorqrJobsAsyncAdapter,
    }.get(args.handler, WorqrAdapter)()
    adapter.mode = "raw" if args.handler == "raw" else adapter.mode
    mode = adapter.model
    with EmbeddedRedis() as server:
        probe = Probe(server.url)
        producer = adapter.producer(server.url)
        producer.enqueue_bulk([index_arg(i) for i in range(args.tasks)])
        producer.close()
        env = dict(os.environ, BENCH_REDIS_URL=server.url, PYTHONPATH=str(ROOT))
        env.update(BENCH_RECORD_DIR=str(records.directory), BENCH_HOLD_SECONDS="0")
        commands = [
            [spy, "record", "--nonblocking", "--format", "raw", "--rate", str(args.rate),
             *([] if args.wall else ["--gil"]),
             "-o", str(workdir / f"profile-{i}.txt"), "--", *adapter.worker_command("")]
            for i in range(args.workers)
        ]  # fmt: skip
        workers = Workers(commands, env, workdir, cwd=ROOT)
        before = probe.snapshot()
        workers.start()
        try:
            done = records.wait(args.tasks, timeout=300, alive=workers.alive)
            after = probe.snapshot()
            worker_cpu = cpu_seconds(_worker_pids(workers))
            for pid in _worker_pids(workers):  # the worker ends; py-spy then writes
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            for process in workers.processes:
                process.wait(timeout=30)
        finally:
            workers.stop()
            probe.close()
    starts = sorted(r.start for r in records.read())
    wall = starts[-1] - starts[0]
    n = len(starts)
    commands = after.commands_since(before)
    lines = [
        f"worqr drain profile: {n} of {args.tasks} tasks, {args.workers} worker processes "
        f"({mode}){'' if done else ' - TIMED OUT'}",
        f"drain rate {(n - 1) / wall:,.0f}/s; per task: wall x workers "
        f"{wall * args.workers / n * 1e6:,.0f} us, worker CPU {worker_cpu / n * 1e6:,.0f} us, "
        f"Redis CPU {(after.cpu - before.cpu) / n * 1e6:,.1f} us, "
        f"commands run in Redis {sum(commands.values()) / n:.2f}",
        "Redis commands per task: "
        + ", ".join(f"{k} {v / n:.2f}" for k, v in commands.most_common(12)),
        "Redis usec per call: "
        + ", ".join(
            f"{k} {(after.usec[k] - before.usec[k]) / max(1, v):.1f}"
            for k, v in commands.most_common(6)
        )
        + "".join(
            f"; {k} (script, the commands inside included) "
            f"{(after.usec[k] - before.usec[k]) / commands[k]:.1f}"
            for k in ("evalsha", "fcall")
            if commands[k]
        ),
    ]
    raw = "".join(p.read_text() for p in sorted(workdir.glob("profile-*.txt")))
    found = top_frames(raw, args.top)
    total = max(1, found.total)
    lines += [
        "",
        f"py-spy at {args.rate}/s: {found.total} samples "
        + (
            "of non-idle threads (a thread blocked reading a Redis reply counts as busy); "
            if args.wall
            else "of the thread holding the GIL (Python CPU time); "
        )
        + f"{found.startup} more in start-up imports, left out",
        "",
    ]
    lines += ["own samples:"] + [f"  {c / total:6.1%}  {name}" for name, c in found.own]
    lines += ["", "inclusive samples:"]
    lines += [f"  {c / total:6.1%}  {name}" for name, c in found.inclusive]
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (args.out / f"profile-{stamp}.txt").write_text("\n".join(lines) + "\n")
    (args.out / f"profile-{stamp}.raw").write_text(raw)
    print("\n".join(lines))
    print(f"\nwrote {args.out / f'profile-{stamp}.txt'} (and .raw: collapsed stacks)")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
