"""The workloads every system runs through, each bounded in time.

Each function takes a `Run` (one system, an empty server, a fresh directory)
and returns flat metrics. Tasks record their start with `benchmarks.record`, so
the harness sends no Redis command while a system works.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .adapters.base import Adapter, Producer
from .harness import Probe, Records, Workers, compile_worqr, percentile
from .record import HOLD_PREFIX, IO_KEY, handler_kind, index_arg

ROOT = Path(__file__).resolve().parents[1]
WARM = "warm"

Metrics = dict[str, Any]


@dataclass
class Run:
    adapter: Adapter
    probe: Probe
    workdir: Path
    quick: bool
    workers: int = 2

    def __post_init__(self) -> None:
        compile_worqr()  # before a workload's clock starts, not inside it

    def size(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def records(self, name: str) -> Records:
        return Records(self.workdir / name)

    def producer(self) -> Producer:
        return self.adapter.producer(self.probe.url)

    def start_workers(self, records: Records, hold: float = 0.0) -> Workers:
        env = dict(os.environ)
        env.update(
            BENCH_REDIS_URL=self.probe.url,
            BENCH_RECORD_DIR=str(records.directory),
            BENCH_HOLD_SECONDS=str(hold),
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
            PYTHONUNBUFFERED="1",
        )
        command = self.adapter.worker_command(self.probe.url)
        workers = Workers([command] * self.workers, env, records.directory, cwd=ROOT)
        workers.start()
        return workers

    def warm_up(self, producer: Producer, records: Records, workers: Workers) -> None:
        """Wait until the workers run tasks, then let them go idle."""
        producer.enqueue_each([f"{WARM}{i:016d}" for i in range(self.workers)])
        if not records.wait(self.workers, timeout=60, alive=workers.alive):
            raise RuntimeError(f"workers did not start:\n{workers.log_tail()}")
        time.sleep(1.0)  # idle: the state the latency workload is about


def _timed(action: Callable[[], None]) -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds spent in ``action``."""
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - wall, time.process_time() - cpu


def enqueue(run: Run) -> Metrics:
    """One producer process: one call per task, then the batch API."""
    each = [index_arg(i) for i in range(run.size(5000, 200))]
    bulk = [index_arg(i) for i in range(run.size(20000, 1000))]
    producer = run.producer()
    try:
        producer.enqueue_each([index_arg(i) for i in range(50)])  # connections, scripts
        run.probe.reset()
        before = run.probe.snapshot()
        wall, cpu = _timed(lambda: producer.enqueue_each(each))
        after = run.probe.snapshot()
        run.probe.reset()
        bulk_wall, _ = _timed(lambda: producer.enqueue_bulk(bulk))
    finally:
        producer.close()
    commands = after.commands_since(before)
    return {
        "each_per_s": len(each) / wall,
        "each_us": wall / len(each) * 1e6,
        "each_producer_cpu_us": cpu / len(each) * 1e6,
        "each_redis_commands": sum(commands.values()) / len(each),
        "each_redis_cpu_us": (after.cpu - before.cpu) / len(each) * 1e6,
        "bulk_per_s": len(bulk) / bulk_wall,
    }


def drain(run: Run) -> Metrics:
    """N tasks queued first, then W workers start; time to run them all."""
    n = max(100, int(run.size(20000, 400) * run.adapter.drain_share))
    producer = run.producer()
    try:
        producer.enqueue_bulk([index_arg(i) for i in range(n)])
    finally:
        producer.close()
    records = run.records("drain")
    launched = time.monotonic()
    workers = run.start_workers(records)
    try:
        finished = records.wait(n, timeout=run.size(120, 40), alive=workers.alive)
    finally:
        workers.stop()
    found = records.read()
    starts = sorted(r.start for r in found)
    if len(starts) < 2:
        raise RuntimeError(f"drain: {len(starts)} of {n} tasks ran:\n{workers.log_tail()}")
    span = starts[-1] - starts[0]
    return {
        "n": n,
        "completed": len(found),
        "distinct": len({r.arg for r in found}),
        "timed_out": not finished,
        "rate": (len(starts) - 1) / span if span > 0 else float("inf"),
        "rate_with_start": len(starts) / (starts[-1] - launched),
        "first_task_s": starts[0] - launched,
        "handler": handler_kind(),
        "io_calls": int(run.probe.client.get(IO_KEY) or 0),  # the io handler's INCRs
    }


def latency(run: Run) -> Metrics:
    """Idle workers; tasks sent one at a time at a fixed rate; enqueue-to-start,
    and the worker and Redis CPU per task at that trickle (idle work included:
    heartbeats, polls, every wake-up), where `cost`'s producer runs flat out."""
    count, interval = run.size(500, 40), 0.01
    records = run.records("latency")
    workers = run.start_workers(records)
    producer = run.producer()
    try:
        run.warm_up(producer, records, workers)
        before, worker_cpu = run.probe.snapshot(), workers.cpu()
        producer.enqueue_paced(count, interval)
        records.wait(count + run.workers, timeout=run.size(60, 20), alive=workers.alive)
        after, worker_cpu = run.probe.snapshot(), workers.cpu() - worker_cpu
    finally:
        producer.close()
        workers.stop()
    waits = [(r.start - float(r.arg)) * 1000 for r in records.read() if not r.arg.startswith(WARM)]
    return {
        "count": len(waits),
        "missing": count - len(waits),
        "rate_per_s": 1 / interval,
        "p50_ms": percentile(waits, 50),
        "p90_ms": percentile(waits, 90),
        "p99_ms": percentile(waits, 99),
        "max_ms": max(waits, default=float("nan")),
        "worker_cpu_us": worker_cpu / count * 1e6,
        "redis_cpu_us": (after.cpu - before.cpu) / count * 1e6,
    }


def cost(run: Run) -> Metrics:
    """Steady state with warm workers: one enqueue call per task while they work.
    Pass 1 reads Redis and worker CPU; pass 2 counts client commands (MONITOR)."""
    share = run.adapter.drain_share  # slow systems get fewer tasks, as in drain
    n = max(200, int(run.size(5000, 200) * share))
    m = max(100, int(run.size(1000, 100) * share))
    records = run.records("cost")
    workers = run.start_workers(records)
    producer = run.producer()
    try:
        run.warm_up(producer, records, workers)
        before, worker_cpu = run.probe.snapshot(), workers.cpu()
        _, producer_cpu = _timed(lambda: producer.enqueue_each([index_arg(i) for i in range(n)]))
        records.wait(n + run.workers, timeout=run.size(120, 30), alive=workers.alive)
        time.sleep(0.2)  # the last acknowledgements
        after, worker_cpu = run.probe.snapshot(), workers.cpu() - worker_cpu
        monitor = run.probe.monitor()
        try:
            producer.enqueue_each([index_arg(n + i) for i in range(m)])
            records.wait(n + m + run.workers, timeout=run.size(60, 20), alive=workers.alive)
            time.sleep(0.2)
        finally:
            monitor.close()
    finally:
        producer.close()
        workers.stop()
    commands = after.commands_since(before)
    return {
        "n": n,
        "client_commands": sum(monitor.client.values()) / m,
        "script_commands": sum(monitor.scripted.values()) / m,
        "redis_commands": sum(commands.values()) / n,
        "redis_cpu_us": (after.cpu - before.cpu) / n * 1e6,
        "worker_cpu_us": worker_cpu / n * 1e6,
        "producer_cpu_us": producer_cpu / n * 1e6,
        "client_command_mix": {k: round(v / m, 3) for k, v in monitor.client.most_common(8)},
    }


def recovery(run: Run) -> Metrics:
    """SIGKILL the worker instance holding a task; time until it starts elsewhere."""
    bound = run.size(60, 12)
    held = f"{HOLD_PREFIX}{0:016d}"
    records = run.records("recovery")
    workers = run.start_workers(records, hold=600)
    producer = run.producer()
    try:
        run.warm_up(producer, records, workers)
        producer.enqueue_each([held])
        if not _wait_record(records, held, lambda pid: True, 30):
            raise RuntimeError(f"the held task never started:\n{workers.log_tail()}")
        first = next(r for r in records.read() if r.arg == held)
        victim = workers.instance_of(first.pid)
        if victim is None:
            raise RuntimeError("the process that holds the task is not a worker's")
        killed = time.monotonic()
        workers.kill(victim)
        moved = _wait_record(records, held, lambda pid: pid != first.pid, bound)
        elapsed = time.monotonic() - killed
    finally:
        producer.close()
        workers.stop()
    return {"recovered": moved, "seconds": elapsed if moved else None, "bound_s": bound}


def _wait_record(records: Records, arg: str, where: Callable[[int], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(r.arg == arg and where(r.pid) for r in records.read()):
            return True
        time.sleep(0.02)
    return False


def memory(run: Run) -> Metrics:
    """Redis bytes per finished task the system retains, and per queued task
    beyond its 20-byte argument (INFO used_memory).

    Retained first: W workers start, run a warm-up task each and stop (what a
    start leaves for good, such as loaded scripts and registrations, is then in
    the baseline); N tasks (fewer for slow systems, as in drain) are queued, W
    workers run them and stop again. What is left per task is what each system
    keeps per finished task with its defaults (a worqr job: its record and a
    result of type none, kept 1 h; RQ: the job hash, 500 s; arq: the result, 1 h;
    saq: the job, 10 min; Celery, Dramatiq and huey without result backends, and
    worqr tasks, keep nothing). Then queued: tasks enqueued with no worker
    running, as before."""
    count, payload = run.size(20000, 1000), 20
    kept = max(200, int(run.size(5000, 400) * run.adapter.drain_share))
    records = run.records("memory")
    producer = run.producer()
    try:
        workers = run.start_workers(records)
        try:
            run.warm_up(producer, records, workers)  # queue-level keys exist
        finally:
            workers.stop()
        time.sleep(0.2)  # the stopped workers' connections are gone
        start = run.probe.snapshot().memory
        keys_start = run.probe.client.dbsize()
        producer.enqueue_bulk([index_arg(i) for i in range(kept)])
        workers = run.start_workers(records)
        try:
            total = kept + run.workers
            finished = records.wait(total, timeout=run.size(120, 40), alive=workers.alive)
            time.sleep(0.5)  # the last acknowledgements and results
        finally:
            workers.stop()
        if not finished:
            raise RuntimeError(f"memory: {records.count()} of {total} tasks ran")
        time.sleep(0.2)
        done = run.probe.snapshot().memory
        keys_done = run.probe.client.dbsize()
        producer.enqueue_bulk([index_arg(i) for i in range(count)])
        after = run.probe.snapshot().memory
    finally:
        producer.close()
    keys = run.probe.client.dbsize()
    return {
        "bytes_per_task": (after - done) / count - payload,
        "keys_per_task": (keys - keys_done) / count,
        "retained_n": kept,
        "retained_bytes_per_task": (done - start) / kept,
        "retained_keys_per_task": (keys_done - keys_start) / kept,
    }


PER_SYSTEM: dict[str, Callable[[Run], Metrics]] = {
    "enqueue": enqueue,
    "drain": drain,
    "latency": latency,
    "cost": cost,
    "recovery": recovery,
    "memory": memory,
}
