"""What the groups benchmark's targets share: the worker processes, pipelined
submits through worqr's own plans, percentiles and the verdict line."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import redis

import worqr
from worqr._core.calls import Call, Plan
from worqr._core.lua import digest, source

from ..harness import Workers, percentile, python, wait_for

ROOT = Path(__file__).resolve().parents[2]  # the repository
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
    for each reply). Scripts go by EVALSHA: each is loaded on the first pipeline
    that meets it (a client's own call may have loaded it as a function only)."""
    loaded: set[str] = set()
    results: list[Any] = []
    pending: dict[int, Any] = {}
    for i, plan in enumerate(plans):
        results.append(None)
        try:
            pending[i] = (plan, next(plan))
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        for _, request in pending.values():
            script = getattr(request, "script", None)
            if script is not None and script not in loaded:
                raw.script_load(source(script))
                loaded.add(script)
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
