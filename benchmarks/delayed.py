"""Delayed jobs: how precisely they start, and what a deep delayed set costs.

    python -m benchmarks.delayed                      # both parts, about 2 minutes
    python -m benchmarks.delayed --part precision --kind async
    python -m benchmarks.delayed --jobs 100 --window 1 --bursts 1 --burst-size 20 \\
        --deep 5000 --ops 50 --rounds 2               # a smoke run

Starts its own redis-server (or uses ``--url``).

Precision: W = 2 idle `worqr.Worker` processes (default settings, a
``@worker.job`` no-op handler) and ``--jobs`` jobs due at staggered times over
``--window`` seconds (each submitted with ``at=``, on Redis's clock, all before
the first is due), plus ``--bursts`` bursts of ``--burst-size`` jobs due in the
same millisecond (one `submit_many` each). Each handler notes ``time.time()``
when it starts (Redis runs on this machine: the same clock as its TIME) and
`current_job().process.waited` (start - due by Redis's clock, in whole ms,
when the job was taken). Prints p50/p99/max of start - due per group and how
many started before they were due (must be 0).

Cost: Redis server time per operation (``INFO commandstats``: the script
calls' usec, EVALSHA or FCALL, which includes the commands its script runs, per
operation) and client wall time per call, on a queue holding 10
delayed jobs and one holding ``--deep`` (created with `submit_many` and a far
``delay``; the time, Redis memory and producer memory this takes are printed).
Operations: submit (ready), submit delayed, cancel (a delayed job), take (one
job: a worker's take, which promotes and arms the timer too), finish (the
take call carrying one finish), promote (nothing due). Depths alternate in
short windows and the ratio deep/shallow is the median of paired windows, as
in ``benchmarks.mesh``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis

import worqr
from worqr._jobs import JobProcess
from worqr.embedded import EmbeddedRedis

from .harness import Workers, median, percentile, python, version_of, wait_for

ROOT = Path(__file__).resolve().parents[1]
QUEUE = "delayed"
PRECISION_PREFIX = "precision"
COST_PREFIX = "delayed-cost"
FAR = 30 * 24 * 3600.0  # a delay no job of the cost part reaches
FILL_BATCH = 10_000  # jobs per submit_many while filling the deep queue
ADMIN = frozenset({"info", "config|resetstat", "config|get", "dbsize", "ping", "function|load"})


# -- the worker processes of the precision part ---------------------------------------


def child(url: str, records: str, kind: str) -> None:
    """One worker process: a no-op job handler that notes its start."""
    worker = worqr.Worker(url, prefix=PRECISION_PREFIX)
    path = os.path.join(records, f"{os.getpid()}.txt")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def note(payload: str) -> None:
        now = time.time()
        waited = worqr.current_job().process.waited
        os.write(fd, f"{payload} {now:.6f} {waited:.3f}\n".encode())

    if kind == "async":

        @worker.job(QUEUE)
        async def run_async(payload: str) -> None:
            note(payload)

    else:

        @worker.job(QUEUE)
        def run_sync(payload: str) -> None:
            note(payload)

    worker.run()


def _read(records: Path) -> list[tuple[str, float, float]]:
    found = []
    for path in records.glob("*.txt"):
        for line in path.read_text().splitlines():
            payload, started, waited = line.split()
            found.append((payload, float(started), float(waited)))
    return found


def _stats(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "min": min(values, default=math.nan),
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
        "max": max(values, default=math.nan),
    }


def precision(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Start - due of staggered and burst jobs on idle workers."""
    records = Path(tempfile.mkdtemp(prefix="worqr-bench-delayed-"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [python(), "-m", "benchmarks.delayed", "--child", url, str(records), args.kind]
    workers = Workers([command] * args.workers, env, records, cwd=ROOT)
    client = worqr.Worqr(url, prefix=PRECISION_PREFIX)
    load_before = os.getloadavg()
    try:
        workers.start()
        warm = 2 * args.workers
        client.submit_many(QUEUE, [f"warm:{i}" for i in range(warm)])
        if not wait_for(lambda: len(_read(records)) >= warm, 60):
            raise SystemExit(f"the workers did not start:\n{workers.log_tail()}")
        time.sleep(1.0)  # idle, as the target says
        base = math.ceil((client.server_time() + args.lead) * 1000)  # ms, Redis's clock
        step = args.window * 1000 / args.jobs
        plan: dict[str, int] = {}
        for i in range(args.jobs):
            plan[f"s:{i}"] = base + round(i * step)
        for b in range(args.bursts):
            due = base + round((b + 0.5) * args.window * 1000 / args.bursts)
            for j in range(args.burst_size):
                plan[f"b{b}:{j}"] = due
        submitting = time.perf_counter()
        for key, due in plan.items():
            if key.startswith("s:"):
                client.submit(QUEUE, f"{key}:{due}", at=due / 1000)
        for b in range(args.bursts):
            burst = [(k, d) for k, d in plan.items() if k.startswith(f"b{b}:")]
            client.submit_many(QUEUE, [f"{k}:{d}" for k, d in burst], at=burst[0][1] / 1000)
        submitted_s = time.perf_counter() - submitting
        ahead_ms = base - client.server_time() * 1000  # > 0: every job was delayed
        total = warm + len(plan)
        deadline = args.lead + args.window + 30
        complete = wait_for(lambda: len(_read(records)) >= total, deadline, interval=0.1)
        time.sleep(0.5)  # a job that ran twice would show now
    finally:
        client.close()
        workers.stop()
    load_after = os.getloadavg()
    found = [(p, s, w) for p, s, w in _read(records) if not p.startswith("warm:")]
    shutil.rmtree(records, ignore_errors=True)
    late: dict[str, list[float]] = defaultdict(list)
    waited: dict[str, list[float]] = defaultdict(list)
    for payload, started, server_waited in found:
        key, _, due = payload.rpartition(":")
        group = "staggered" if key.startswith("s:") else "burst"
        for name in (group, "all"):
            late[name].append(started * 1000 - int(due))
            waited[name].append(server_waited * 1000)
    return {
        "kind": args.kind,
        "workers": args.workers,
        "planned": len(plan),
        "started": len(found),
        "distinct": len({p for p, _, _ in found}),
        "complete": complete,
        "submit_s": submitted_s,
        "first_due_ahead_ms": ahead_ms,
        "load_before": load_before,
        "load_after": load_after,
        "start_minus_due_ms": {name: _stats(values) for name, values in late.items()},
        "waited_ms": {name: _stats(values) for name, values in waited.items()},
        "early": {name: sum(1 for v in values if v < 0) for name, values in late.items()},
    }


# -- the cost part ----------------------------------------------------------------------


def _script_usec(client: redis.Redis) -> tuple[int, int, int]:
    """Script calls' usec and calls (EVALSHA, or FCALL on Redis >= 7; a call's
    usec includes the commands its script runs),
    and the calls of every other command (those scripts run, and direct ones)."""
    usec = scripts = others = 0
    for key, value in client.info("commandstats").items():
        name = key.removeprefix("cmdstat_")
        if name in ("evalsha", "eval", "fcall"):
            usec += int(value["usec"])
            scripts += int(value["calls"])
        elif name not in ADMIN:
            others += int(value["calls"])
    return usec, scripts, others


def _ops(client: worqr.Worqr, queue: str) -> dict[str, Callable[[int], None]]:
    """One window's operations, in order; each keeps the queue's depth."""
    delayed: list[str] = []
    taken: list[JobProcess] = []

    def take(i: int) -> None:
        _, jobs, _ = client.internals.take_jobs(queue, [], 1)
        taken.extend(jobs)

    return {
        "submit": lambda i: client.submit(queue, f"{i:020d}"),
        "submit_delayed": lambda i: delayed.append(client.submit(queue, f"{i:020d}", delay=FAR).id),
        "cancel": lambda i: client.cancel_job(queue, delayed[i]) or None,
        "take": take,
        "finish": lambda i: client.internals.take_jobs(queue, [(taken[i], "n", b"")], 0) and None,
        "promote": lambda i: client.internals.promote_due(queue) and None,
    }


def _window(probe: redis.Redis, client: worqr.Worqr, queue: str, count: int) -> dict[str, float]:
    result: dict[str, float] = {}
    for name, op in _ops(client, queue).items():
        probe.config_resetstat()
        times = []
        for i in range(count):
            start = time.perf_counter()
            op(i)
            times.append(time.perf_counter() - start)
        usec, scripts, others = _script_usec(probe)
        result[f"{name}_client_us"] = median(times) * 1e6
        result[f"{name}_server_us"] = usec / count
        result[f"{name}_scripts"] = scripts / count
        result[f"{name}_commands"] = others / count
    return result


@contextlib.contextmanager
def _timed(label: str) -> Iterator[None]:
    start = time.perf_counter()
    yield
    print(f"  {label}: {time.perf_counter() - start:.1f} s", flush=True)


def cost(url: str, args: argparse.Namespace) -> dict[str, Any]:
    probe = redis.Redis.from_url(url)
    client = worqr.Worqr(url, prefix=COST_PREFIX)
    queues = {"shallow": ("shallow", 10), "deep": ("deep", args.deep)}
    result: dict[str, Any] = {"deep": args.deep, "ops": args.ops * args.rounds}
    samples: dict[str, list[float]] = defaultdict(list)
    try:
        client.start_worker()
        client.submit_many(queues["shallow"][0], [f"{i:020d}" for i in range(10)], delay=FAR)
        memory = probe.info("memory")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        queue, depth = queues["deep"]
        for first in range(0, depth, FILL_BATCH):
            size = min(FILL_BATCH, depth - first)
            client.submit_many(queue, [f"{first + i:020d}" for i in range(size)], delay=FAR)
        fill_s = time.perf_counter() - start
        after = probe.info("memory")
        result.update(
            fill_s=fill_s,
            fill_per_s=depth / fill_s,
            bytes_per_delayed_job=(after["used_memory"] - memory["used_memory"]) / depth,
            redis_used_memory_mb=after["used_memory"] / 2**20,
            redis_peak_memory_mb=after["used_memory_peak"] / 2**20,
            producer_max_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            producer_rss_before_mb=rss / 1024,
        )
        print(
            f"  filled {depth:,} delayed jobs in {fill_s:.1f} s ({depth / fill_s:,.0f}/s)",
            flush=True,
        )
        for _ in range(args.rounds):
            for label, (queue, _) in queues.items():
                for name, number in _window(probe, client, queue, args.ops).items():
                    samples[f"{label}_{name}"].append(number)
        for label, (queue, _) in queues.items():
            counts = client.count_jobs(queue)
            result[f"{label}_delayed_after"] = counts["delayed"]
            result[f"{label}_finished_after"] = counts["finished"]
    finally:
        client.close()
        probe.close()
    result.update({name: median(values) for name, values in samples.items()})
    for name in [n.removeprefix("deep_") for n in samples if n.startswith("deep_")]:
        if name.endswith(("_scripts", "_commands")):
            continue
        pairs = zip(samples[f"deep_{name}"], samples[f"shallow_{name}"], strict=True)
        result[f"ratio_{name}"] = median([d / s for d, s in pairs if s > 0])
    return result


# -- output ---------------------------------------------------------------------------


def _load(loads: tuple[float, ...] | list[float]) -> str:
    return "/".join(f"{x:.2f}" for x in loads)


def print_precision(found: dict[str, Any], target_ms: float) -> None:
    print(
        f"\nDelayed-job precision: {found['workers']} idle worker processes "
        f"(worqr.Worker defaults, {found['kind']} @worker.job no-op handler); "
        f"{found['planned']:,} jobs, {found['started']:,} started "
        f"({found['distinct']:,} distinct); submitted in {found['submit_s']:.2f} s, "
        f"the first due {found['first_due_ahead_ms']:,.0f} ms after the last submit; "
        f"load average {_load(found['load_before'])} before, {_load(found['load_after'])} after"
    )
    print("\nstart - due, ms (handler's time.time() against the due time on Redis's clock):\n")
    print("| jobs | n | min | p50 | p90 | p99 | max | started early |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for group, stats in found["start_minus_due_ms"].items():
        print(
            f"| {group} | {stats['n']:,} | {stats['min']:.2f} | {stats['p50']:.2f} | "
            f"{stats['p90']:.2f} | {stats['p99']:.2f} | {stats['max']:.2f} | "
            f"{found['early'][group]} |"
        )
    print("\nwaited (Redis's start - due when the job was taken, whole ms), ms:\n")
    print("| jobs | p50 | p90 | p99 | max |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for group, stats in found["waited_ms"].items():
        print(
            f"| {group} | {stats['p50']:.0f} | {stats['p90']:.0f} | {stats['p99']:.0f} | "
            f"{stats['max']:.0f} |"
        )
    stagger = found["start_minus_due_ms"].get("staggered", {})
    p99 = stagger.get("p99", math.nan)
    early = sum(found["early"].values())
    met = p99 < target_ms and early == 0 and found["started"] == found["distinct"]
    print(
        f"\n- [{'met' if met else 'MISSED'}] start - due p99 < {target_ms:g} ms with idle "
        f"workers (staggered jobs), none early: p99 {p99:.2f} ms, {early} early"
    )


OPS = ("submit", "submit_delayed", "cancel", "take", "finish", "promote")


def print_cost(found: dict[str, Any], limit: float) -> None:
    deep = found["deep"]
    print(
        f"\nFilling: {deep:,} delayed jobs (submit_many, {FILL_BATCH:,} per call) in "
        f"{found['fill_s']:.1f} s = {found['fill_per_s']:,.0f}/s; Redis +"
        f"{found['bytes_per_delayed_job']:,.0f} bytes per delayed job (INFO used_memory), "
        f"{found['redis_used_memory_mb']:,.0f} MB used, peak {found['redis_peak_memory_mb']:,.0f}"
        f" MB; producer max RSS {found['producer_max_rss_mb']:,.0f} MB "
        f"(from {found['producer_rss_before_mb']:,.0f} MB)"
    )
    print(
        f"\nPer operation with 10 vs {deep:,} delayed jobs ({found['ops']:,} ops of each kind "
        "per depth; medians of windows; ratio: median of paired windows):\n"
    )
    print(
        "| operation | Redis µs (10) | Redis µs (deep) | ratio | client µs (10) | "
        "client µs (deep) | ratio | scripts/op | commands/op (deep) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for op in OPS:
        print(
            f"| {op} | {found[f'shallow_{op}_server_us']:.1f} | {found[f'deep_{op}_server_us']:.1f}"
            f" | {found[f'ratio_{op}_server_us']:.2f}x | {found[f'shallow_{op}_client_us']:.0f} | "
            f"{found[f'deep_{op}_client_us']:.0f} | {found[f'ratio_{op}_client_us']:.2f}x | "
            f"{found[f'deep_{op}_scripts']:.2f} | {found[f'deep_{op}_commands']:.1f} |"
        )
    worst = max(found[f"ratio_{op}_server_us"] for op in OPS)
    print(
        f"\nAfter: shallow queue {found['shallow_delayed_after']:,} delayed, deep "
        f"{found['deep_delayed_after']:,} delayed"
    )
    print(
        f"\n- [{'met' if worst <= limit else 'MISSED'}] per-op Redis time at {deep:,} delayed "
        f"within {limit:g}x of 10: worst {worst:.2f}x"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.delayed",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", help="an existing Redis (default: start one)")
    parser.add_argument("--part", default="precision,cost", help="precision, cost or both")
    parser.add_argument("--kind", choices=("sync", "async"), default="sync", help="handler")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument("--jobs", type=int, default=2000, help="staggered jobs")
    parser.add_argument("--window", type=float, default=10.0, help="seconds they spread over")
    parser.add_argument("--lead", type=float, default=2.0, help="seconds before the first is due")
    parser.add_argument("--bursts", type=int, default=4, help="bursts due in one ms each")
    parser.add_argument("--burst-size", type=int, default=100, help="jobs per burst")
    parser.add_argument("--deep", type=int, default=1_000_000, help="delayed jobs of the deep")
    parser.add_argument("--ops", type=int, default=300, help="operations per kind and window")
    parser.add_argument("--rounds", type=int, default=11, help="windows per depth")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(*argv[1:4])
        return 0
    args = parse_args(argv)
    parts = {p.strip() for p in args.part.split(",") if p.strip()}
    unknown = parts - {"precision", "cost"}
    if unknown:
        raise SystemExit(f"unknown part: {', '.join(sorted(unknown))}")
    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            url = stack.enter_context(EmbeddedRedis()).url
        info = redis.Redis.from_url(url).info("server")
        print(
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}: Python {sys.version.split()[0]}, Redis "
            f"{info['redis_version']}, redis-py {version_of('redis')} (hiredis "
            f"{version_of('hiredis')}), worqr {version_of('worqr')}, {os.cpu_count()} cores; "
            f"load average {_load(os.getloadavg())}",
            flush=True,
        )
        if "precision" in parts:
            print_precision(precision(url, args), 50.0)
        if "cost" in parts:
            print(f"\nCost: filling the deep queue ({args.deep:,} delayed jobs)...", flush=True)
            print_cost(cost(url, args), 1.5)
        print(f"\nload average at the end {_load(os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
