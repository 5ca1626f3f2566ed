"""Fair-share groups and durable pause: the benchmark targets of issue 29.

    python -m benchmarks.groups                       # every target, full sizes
    python -m benchmarks.groups --quick               # smaller floods and group counts
    python -m benchmarks.groups --only flat,pause     # some targets

Starts its own redis-server (or uses ``--url``); the worker processes are real
`worqr.Worker` processes of this module's ``--child`` mode, a no-op
``@worker.job`` handler each (default settings). Prints a Markdown table per
target and a PASS/FAIL line against the issue's bound.

- fairness: 4 worker processes; tenant A's flood (``submit_many(group="A")``,
  filled while group A is paused, then resumed: all of it queued at once) while
  tenants B-K each submit one job every 100 ms (a thread, 10 ms apart). The
  start delay of B-K's jobs (the handler's ``time.time()`` minus
  ``JobInfo.created``, Redis's clock on this machine; and ``JobInfo.started`` -
  ``created``, when the take happened) against a run of B-K alone as long as
  the flood's drain, and a reference run where nobody has a group (FIFO).
- flat: Redis server time per call (``INFO commandstats``: EVALSHA usec, which
  includes the commands the script runs) of a submit and of a worker's take
  (finish the job held, take one), at 10 groups and at ``--groups`` groups with
  queued jobs, and with ``group_max_active=1`` at 10 groups and at ``--groups``
  groups of which all but 10 are at their cap. Server time is what grows if a
  script scans; commands per call (scripts' own, counted by Redis) and client
  wall time are printed beside it. Queues alternate in short windows; ratios
  are medians of paired windows, as in ``benchmarks.delayed``.
- pause: 4 worker processes draining a deep ungrouped queue at full rate;
  ``pause()``; Redis TIME read when it returned; every job's
  ``JobInfo.started`` (the take, in server ms) must be <= that time; then
  ``resume()`` and the start rate in 100 ms windows against the rate before.
- memory: ``--memory-groups`` groups used once each (one job per group,
  ``result_ttl=0`` so finished records go too; submitted while the queue is
  paused, so every group is queued at once, then resumed and drained by 4
  workers), then DBSIZE and ``used_memory`` against before.

Bulk submits go through worqr's own submit plans (``submit_many``), many plans
side by side with one pipeline per step (`pipelined`): the same script calls a
loop of ``submit`` sends, without waiting for each reply.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import redis

import worqr
from worqr._core.calls import Call, Plan
from worqr._core.lua import digest
from worqr._jobs import JobProcess
from worqr.embedded import EmbeddedRedis

from .delayed import _script_usec
from .harness import Workers, median, percentile, python, version_of, wait_for

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "groups-bench"
TENANTS = [chr(code) for code in range(ord("B"), ord("L"))]  # B..K: 10 small tenants
WORKERS = 4
ROUND = 2000  # plans per pipeline round
WINDOW_MS = 100
TARGETS = ("fairness", "flat", "pause", "memory")


# -- worker processes ---------------------------------------------------------------


def child(url: str, records: str, queue: str) -> None:
    """One worker process: a no-op handler that notes when the recorded jobs
    (payloads starting with ``r:``) start."""
    worker = worqr.Worker(url, prefix=PREFIX)
    fd = os.open(os.path.join(records, f"{os.getpid()}.txt"), os.O_WRONLY | os.O_CREAT, 0o644)

    @worker.job(queue)
    def run(payload: str) -> None:
        if payload.startswith("r:"):
            os.write(fd, f"{worqr.current_job().id} {time.time():.6f}\n".encode())

    worker.run()


def read_starts(records: Path) -> dict[str, float]:
    """Job id -> the handler's start (epoch seconds)."""
    found = {}
    for path in records.glob("*.txt"):
        for line in path.read_text().splitlines():
            id, _, at = line.partition(" ")
            found[id] = float(at)
    return found


@contextlib.contextmanager
def workers(url: str, queue: str, count: int = WORKERS) -> Iterator[Path]:
    """``count`` worker processes on ``queue``, started and warmed (each ran a job
    or idles); yields the directory of their start records."""
    records = Path(tempfile.mkdtemp(prefix="worqr-bench-groups-"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [python(), "-m", "benchmarks.groups", "--child", url, str(records), queue]
    pool = Workers([command] * count, env, records, cwd=ROOT)
    try:
        pool.start()
        with worqr.Worqr(url, prefix=PREFIX) as client:
            warm = [client.submit(queue, f"r:warm:{i}", result_ttl=0).id for i in range(4 * count)]
            done = wait_for(lambda: set(warm) <= set(read_starts(records)), 60)
            if not done or not pool.alive():
                raise SystemExit(f"the workers did not start:\n{pool.log_tail()}")
        time.sleep(1.0)  # every process registered and idle
        yield records
    finally:
        pool.stop()
        shutil.rmtree(records, ignore_errors=True)


# -- bulk submits -------------------------------------------------------------------


def _send(pipe: Any, request: object) -> None:
    if not isinstance(request, Call):
        raise TypeError(f"pipelined plans send script calls and commands, not {request!r}")
    if request.script is None:
        pipe.execute_command(*request.args)
    else:
        keys = request.keys
        pipe.execute_command("EVALSHA", digest(request.script), len(keys), *keys, *request.args)


def pipelined(raw: redis.Redis, plans: Iterable[Plan[Any]]) -> list[Any]:
    """Drive ``plans`` side by side: every plan's next request in one pipeline,
    each reply handed back to its plan (the client's executor, minus waiting
    for each reply). The scripts must be loaded (one ordinary call does it)."""
    results: list[Any] = []
    pending: dict[int, Any] = {}
    for i, plan in enumerate(plans):
        results.append(None)
        try:
            pending[i] = (plan, next(plan))
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        pipe = raw.pipeline(transaction=False)
        for _, request in pending.values():
            _send(pipe, request)
        replies = pipe.execute(raise_on_error=False)
        step: dict[int, Any] = {}
        for (i, (plan, _)), reply in zip(pending.items(), replies, strict=True):
            try:
                sent = plan.throw(reply) if isinstance(reply, Exception) else plan.send(reply)
                step[i] = (plan, sent)
            except StopIteration as stop:
                results[i] = stop.value
        pending = step
    return results


def submit_groups(
    client: worqr.Worqr,
    raw: redis.Redis,
    queue: str,
    groups: Iterable[str],
    jobs: int = 1,
    **options: Any,
) -> int:
    """One ``submit_many`` of ``jobs`` jobs per group, in pipelined rounds; how
    many groups."""
    submission = client.internals.core.submission
    names = list(groups)
    for first in range(0, len(names), ROUND):
        plans = [
            submission.submit_many(queue, ["x"] * jobs, group=name, **options)
            for name in names[first : first + ROUND]
        ]
        pipelined(raw, plans)
    return len(names)


def submit_flood(
    client: worqr.Worqr, raw: redis.Redis, queue: str, count: int, **options: Any
) -> None:
    """``count`` jobs, as ``submit_many`` would send them (a chunk per call), the
    chunks' plans pipelined."""
    chunk = client.settings.jobs.submit_chunk
    submission = client.internals.core.submission
    plans = [
        submission.submit_many(queue, ["x"] * min(chunk, count - first), **options)
        for first in range(0, count, chunk)
    ]
    for first in range(0, len(plans), 20):
        pipelined(raw, plans[first : first + 20])


# -- statistics and output ---------------------------------------------------------------


def stats(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p99": percentile(values, 99),
        "max": max(values, default=math.nan),
    }


def verdict(met: bool, text: str) -> None:
    print(f"\n{'PASS' if met else 'FAIL'}: {text}", flush=True)


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


# -- 1. fairness --------------------------------------------------------------------------


class Tenants(threading.Thread):
    """Tenants B-K: each submits one job every 100 ms, 10 ms after the one before."""

    def __init__(self, url: str, queue: str, grouped: bool) -> None:
        super().__init__(daemon=True)
        self.client = worqr.Worqr(url, prefix=PREFIX)
        self.queue = queue
        self.grouped = grouped
        self.ids: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        tick = 0
        while not self.halt.is_set():
            pause = start + tick * 0.01 - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            tenant = TENANTS[tick % len(TENANTS)]
            group = tenant if self.grouped else None
            self.ids.append(self.client.submit(self.queue, f"r:{tenant}", group=group).id)
            tick += 1

    def finish(self) -> list[str]:
        self.halt.set()
        self.join(10)
        self.client.close()
        return self.ids


def _flood_queued(url: str, client: worqr.Worqr, queue: str, flood: int, grouped: bool) -> None:
    """Tenant A's flood, all queued at once: filled while held, then released."""
    if grouped:
        client.pause(queue, group="A")
    else:
        client.pause(queue)
    with contextlib.closing(redis.Redis.from_url(url)) as raw:
        client.submit(queue, "x", group="A" if grouped else None)  # loads the script
        submit_flood(client, raw, queue, flood - 1, group="A" if grouped else None)
    if grouped:
        client.resume(queue, group="A")
    else:
        client.resume(queue)


class Delays:
    """B-K's start delays, read while the run goes on: a queue keeps at most
    100,000 terminal jobs (`JobSettings.max_retained`), so after a flood the
    earliest small jobs' records are purged 10 s after they end."""

    def __init__(self, client: worqr.Worqr, queue: str, records: Path) -> None:
        self.client, self.queue, self.records = client, queue, records
        self.handler: dict[str, float] = {}
        self.taken: dict[str, float] = {}

    def collect(self, ids: list[str]) -> None:
        """Read the jobs of ``ids`` that started since the last call."""
        starts = read_starts(self.records)
        for id in ids:
            if id in self.taken or id not in starts:
                continue
            info = self.client.get_job(self.queue, id)
            if info is not None and info.started is not None:
                self.handler[id] = (starts[id] - info.created) * 1000
                self.taken[id] = (info.started - info.created) * 1000


def fairness_run(url: str, queue: str, flood: int, grouped: bool, seconds: float) -> dict[str, Any]:
    """One run: the flood (if any), B-K for ``seconds`` at least and until the
    flood is drained; their start delays."""
    with workers(url, queue) as records, worqr.Worqr(url, prefix=PREFIX) as client:
        if flood:
            _flood_queued(url, client, queue, flood, grouped)
        began = time.monotonic()
        tenants = Tenants(url, queue, grouped)
        tenants.start()
        delays = Delays(client, queue, records)

        def going() -> bool:  # B-K run ``seconds`` at least, and until the flood is drained
            flooded = client.count_jobs(queue)["queued"] > len(TENANTS)
            return time.monotonic() - began < seconds or flooded

        while going():
            if time.monotonic() - began > 900:
                raise SystemExit("the flood was not drained in 900 s")
            delays.collect(list(tenants.ids))
            time.sleep(0.5)
        elapsed = time.monotonic() - began
        ids = tenants.finish()
        wait_for(lambda: set(ids) <= set(read_starts(records)), 60)
        delays.collect(ids)
    return {
        "flood": flood,
        "grouped": grouped,
        "seconds": elapsed,
        "submitted": len(ids),
        "handler": stats(list(delays.handler.values())),
        "taken": stats(list(delays.taken.values())),
    }


def fairness(url: str, args: argparse.Namespace) -> None:
    print(f"\n## Fairness: tenant A floods {args.flood:,} jobs, B-K one job each per 100 ms")
    print(f"(load average {load()})", flush=True)
    runs = {"flood, groups": fairness_run(url, "fair-groups", args.flood, True, 2.0)}
    seconds = runs["flood, groups"]["seconds"]
    runs["no flood, groups"] = fairness_run(url, "fair-alone", 0, True, seconds)
    runs["flood, no groups (FIFO)"] = fairness_run(url, "fair-fifo", args.flood, False, 2.0)
    print(
        "\n| run | B-K jobs | run s | handler start - created p50 ms | p99 | max | "
        "taken - created p50 ms | p99 | max |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, run in runs.items():
        h, t = run["handler"], run["taken"]
        print(
            f"| {name} | {h['n']:,} of {run['submitted']:,} | {run['seconds']:.1f} | "
            f"{h['p50']:.2f} | {h['p99']:.2f} | {h['max']:.2f} | {t['p50']:.2f} | "
            f"{t['p99']:.2f} | {t['max']:.2f} |"
        )
    flood, alone = runs["flood, groups"], runs["no flood, groups"]
    taken = flood["taken"]["p99"] / alone["taken"]["p99"]
    handler = flood["handler"]["p99"] / alone["handler"]["p99"]
    verdict(  # the start: the take (JobInfo.started), take-ahead included
        taken <= 2.0,
        f"B-K start delay (JobInfo.started - created) p99 with A's flood within 2x of "
        f"without: {taken:.2f}x ({flood['taken']['p99']:.2f} vs {alone['taken']['p99']:.2f} "
        f"ms); handler start - created {handler:.2f}x ({flood['handler']['p99']:.2f} vs "
        f"{alone['handler']['p99']:.2f} ms); load average {load()}",
    )


# -- 2. flat cost -------------------------------------------------------------------------


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
        "Redis µs: EVALSHA usec per call (scripts' commands included); medians of windows\n"
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


# -- 3. pause ----------------------------------------------------------------------------


def _starts(client: worqr.Worqr, queue: str) -> list[float]:
    """Every finished job's ``JobInfo.started``."""
    found: list[float] = []
    cursor: str | None = None
    while True:
        jobs, cursor = client.get_jobs(queue, "finished", limit=1000, cursor=cursor)
        found += [job.started for job in jobs if job.started is not None]
        if cursor is None:
            return found


def _windows(starts: list[float], begin: float, count: int, step: float = 0.1) -> list[int]:
    return [
        sum(1 for s in starts if begin + k * step <= s < begin + (k + 1) * step)
        for k in range(count)
    ]


def _time_to_full(starts: list[float], resumed: float, full: float) -> float:
    """Ms from ``resumed`` to the first 100 ms window (in 10 ms steps) holding
    90% of the full rate's starts."""
    for step in range(0, 3000, 10):
        begin = resumed + step / 1000
        if sum(1 for s in starts if begin <= s < begin + 0.1) >= 0.9 * full:
            return float(step)
    return math.inf


def pause_run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    queue = "pause"
    with workers(url, queue), worqr.Worqr(url, prefix=PREFIX) as client:
        client.pause(queue)
        with contextlib.closing(redis.Redis.from_url(url)) as raw:
            submit_flood(client, raw, queue, args.pause_jobs)
        client.resume(queue)
        time.sleep(args.pause_after)  # full drain
        called = client.server_time()
        client.pause(queue)
        paused = client.server_time()  # after pause returned
        time.sleep(1.0)
        resuming = client.server_time()
        client.resume(queue)
        resumed = client.server_time()
        time.sleep(args.pause_after)
        client.pause(queue)
        wait_for(lambda: client.count_jobs(queue)["active"] == 0, 30)
        left = client.count_jobs(queue)["queued"]
        starts = _starts(client, queue)
    before = _windows(starts, called - 1.0, 10)
    full = median(before)
    return {
        "jobs": args.pause_jobs,
        "started": len(starts),
        "left": left,
        "late": sum(1 for s in starts if paused < s < resuming),
        "between": sum(1 for s in starts if called < s <= paused),
        "last_ms": (max(s for s in starts if s <= paused) - paused) * 1000,
        "pause_ms": (paused - called) * 1000,
        "resume_ms": (resumed - resuming) * 1000,
        "first_ms": (min(s for s in starts if s >= resuming) - resumed) * 1000,
        "full": full,
        "before": before,
        "after": _windows(starts, resumed, 10),
        "to_full_ms": _time_to_full(starts, resumed, full),
    }


def pause(url: str, args: argparse.Namespace) -> None:
    print(f"\n## Pause: {WORKERS} worker processes draining {args.pause_jobs:,} queued jobs")
    print(f"(load average {load()})", flush=True)
    found = pause_run(url, args)
    print("\n| figure | value |")
    print("| --- | ---: |")
    rows = [
        ("jobs started (read back)", f"{found['started']:,}"),
        ("started after pause returned, before resume", f"{found['late']}"),
        ("started while pause was running", f"{found['between']}"),
        ("last start before pause returned, ms", f"{found['last_ms']:.1f}"),
        ("pause call, ms (Redis TIME before/after)", f"{found['pause_ms']:.1f}"),
        ("resume call, ms", f"{found['resume_ms']:.1f}"),
        ("first start after resume returned, ms", f"{found['first_ms']:.1f}"),
        ("full rate: starts per 100 ms (median of the 10 before pause)", f"{found['full']:.0f}"),
        ("starts per 100 ms, the 10 windows before pause", " ".join(map(str, found["before"]))),
        ("starts per 100 ms, the 10 windows after resume", " ".join(map(str, found["after"]))),
        (
            "first 100 ms window at 90% of full rate starts, ms after resume",
            f"{found['to_full_ms']:.0f}",
        ),
        ("jobs still queued at the end", f"{found['left']:,}"),
    ]
    for name, value in rows:
        print(f"| {name} | {value} |")
    met = found["late"] == 0 and found["to_full_ms"] <= 100 and found["left"] > 0
    verdict(
        met,
        f"no job taken after pause returned ({found['late']}); full rate (90%) within "
        f"100 ms of resume: a full window starts {found['to_full_ms']:.0f} ms after it; "
        f"load average {load()}",
    )


# -- 4. memory ---------------------------------------------------------------------------


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


# -- main ----------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.groups",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", help="an existing Redis (default: start one)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes (see below)")
    parser.add_argument("--only", default=",".join(TARGETS), help="targets, comma-separated")
    parser.add_argument("--flood", type=int, help="tenant A's jobs (100,000; quick 10,000)")
    parser.add_argument("--groups", type=int, help="flat: groups (100,000; quick 10,000)")
    parser.add_argument("--ops", type=int, default=200, help="calls per op and window")
    parser.add_argument("--rounds", type=int, help="windows per queue (11; quick 5)")
    parser.add_argument("--pause-jobs", type=int, help="queued jobs (150,000; quick 40,000)")
    parser.add_argument("--pause-after", type=float, help="s of drain around pause (1.5)")
    parser.add_argument("--memory-groups", type=int, help="groups (1,000,000; quick 50,000)")
    args = parser.parse_args(argv)
    sizes = {
        "flood": (100_000, 10_000),
        "groups": (100_000, 10_000),
        "rounds": (11, 5),
        "pause_jobs": (150_000, 40_000),
        "pause_after": (1.5, 1.5),
        "memory_groups": (1_000_000, 50_000),
    }
    for name, (full, quick) in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(*argv[1:4])
        return 0
    args = parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(chosen) - set(TARGETS)
    if unknown:
        raise SystemExit(f"unknown target: {', '.join(sorted(unknown))}")
    parts = {"fairness": fairness, "flat": flat, "pause": pause, "memory": memory}
    with contextlib.ExitStack() as stack:
        url = args.url or stack.enter_context(EmbeddedRedis()).url
        admin = stack.enter_context(contextlib.closing(redis.Redis.from_url(url)))
        info = admin.info("server")
        print(
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}: Python {sys.version.split()[0]}, Redis "
            f"{info['redis_version']}, redis-py {version_of('redis')}, worqr "
            f"{version_of('worqr')}, {os.cpu_count()} cores; load average {load()}",
            flush=True,
        )
        for name in TARGETS:
            if name in chosen:
                admin.flushall()  # each target starts from an empty server
                parts[name](url, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
