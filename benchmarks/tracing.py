"""What tracing costs a worker: a job drain with and without OpenTelemetry.

    python -m benchmarks.tracing [--jobs 20000] [--rounds 3] [--handler sync|async]
                                 [--work-us 0]

Starts its own redis-server. Each run is a fresh interpreter that submits
``--jobs`` jobs, then starts one worker in the same process and times the
drain, from its handler's first call to its last, in one of three modes:

- ``off``: the OpenTelemetry API cannot be imported (worqr without the extra);
- ``api``: the API installed, no SDK configured, the worker given `TracingHooks`
  (its spans are non-recording);
- ``sdk``: the SDK configured with a `BatchSpanProcessor` exporting to an
  exporter that discards the spans, the worker given `TracingHooks`.

The modes take turns, ``--rounds`` times; the table gives each mode's jobs/s
and the worker process's CPU per job (median and best: on a shared machine the
best is the steadier), and what tracing adds per run measured alone (the
hooks' start and end of a run's span, and the seam making it current).
``--work-us`` gives the handler that much CPU work per call (0: a no-op, the
worst case for tracing's share). Targets (issue 30): ``sdk`` at most 5%
slower, ``api`` within noise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from .harness import median, version_of

MODES = ("off", "api", "sdk")


def _configure(mode: str) -> list[Any]:
    """The process's tracing for ``mode``: the worker's hooks."""
    if mode == "off":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # as if not installed
        return []
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    from worqr.tracing import TracingHooks

    if mode == "sdk":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        class Discard(SpanExporter):
            def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Discard()))
        trace.set_tracer_provider(provider)
    return [TracingHooks()]


def child(mode: str, url: str, jobs: int, handler: str, work: float) -> None:
    """One run: prints ``{"mode", "seconds", "cpu"}``: the drain's wall time and
    the process's CPU time, from the handler's first call to its last."""
    hooks = _configure(mode)
    import worqr

    prefix = f"trace-bench-{uuid.uuid4().hex[:8]}"
    with worqr.Worqr(url, prefix=prefix) as client:
        client.submit_many("q", ["x"] * jobs, result_ttl=60)
    worker = worqr.Worker(url, prefix=prefix, hooks=hooks)
    calls = [0]
    first: list[float] = []
    cpu: list[float] = []
    done = threading.Event()

    def count() -> None:
        if work:  # the handler's own CPU work (the GIL's: a sync lane's or the loop's)
            until = time.perf_counter() + work
            while time.perf_counter() < until:
                pass
        if not calls[0]:
            first.append(time.perf_counter())
            cpu.append(time.process_time())
        calls[0] += 1
        if calls[0] == jobs:
            first.append(time.perf_counter())
            cpu.append(time.process_time())
            done.set()

    if handler == "async":

        @worker.job("q")
        async def run_async(payload: str) -> None:
            count()

    else:

        @worker.job("q")
        def run_sync(payload: str) -> None:
            count()

    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    if not done.wait(300):
        raise SystemExit(f"{mode}: the drain did not end ({calls[0]} of {jobs})")
    worker.stop()
    thread.join(30)
    traced = _traced_run_cost(hooks)
    result = {"mode": mode, "seconds": first[1] - first[0], "cpu": cpu[1] - cpu[0]}
    print(json.dumps({**result, "per_run": traced}))


def _traced_run_cost(hooks: list[Any], runs: int = 20000) -> float:
    """CPU seconds per run that tracing adds, alone: the hooks' start and end of a
    run (its parent read from a traceparent) and the seam making its span current."""
    import contextvars

    from worqr._jobs import JobProcess
    from worqr._tracing import enter_run

    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    made = [
        JobProcess(
            f"p{i}",
            "q",
            "x",
            b"x",
            "w",
            job_id=f"j{i}",
            entry=f"j{i}#1",
            attempt=1,
            failures=0,
            recoveries=0,
            waited=0.0,
            retries=None,
            backoff=None,
            timeout=None,
            traceparent=parent,
        )
        for i in range(runs)
    ]
    context = contextvars.copy_context()
    began = time.process_time()
    for run in made:
        for each in hooks:
            each.on_job_run_started(run)
        enter_run(context, run.id)
        for each in hooks:
            each.on_job_run_ended(run, "finished", 0.0, None)
    return (time.process_time() - began) / runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tracing")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--handler", choices=("sync", "async"), default="sync")
    parser.add_argument("--work-us", type=float, default=0.0, help="CPU work per handler call")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], args.jobs, args.handler, args.work_us / 1e6)
        return 0
    from worqr.embedded import EmbeddedRedis

    print(
        f"worqr {version_of('worqr')}, opentelemetry-sdk {version_of('opentelemetry-sdk')}; "
        f"{args.jobs:,} jobs per run, {args.handler} handler doing {args.work_us:g} µs of "
        f"CPU work, {args.rounds} rounds"
    )
    seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
    per_run: dict[str, list[float]] = {mode: [] for mode in MODES}
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    with EmbeddedRedis() as server:
        for round in range(args.rounds):
            for mode in MODES[round % 3 :] + MODES[: round % 3]:  # each mode goes first once
                command = [sys.executable, "-m", "benchmarks.tracing", "--child", mode]
                command += [server.url, "--jobs", str(args.jobs), "--handler", args.handler]
                command += ["--work-us", str(args.work_us)]
                out = subprocess.run(command, env=env, cwd=root, capture_output=True, check=True)
                result = json.loads(out.stdout.decode().splitlines()[-1])
                seconds[mode].append(result["seconds"])
                cpu[mode].append(result["cpu"])
                per_run[mode].append(result["per_run"])
    _table(args.jobs, seconds, cpu, per_run)
    return 0


def _table(
    jobs: int,
    seconds: dict[str, list[float]],
    cpu: dict[str, list[float]],
    per_run: dict[str, list[float]],
) -> None:
    """Per mode: the drain's jobs/s (median, best) and worker CPU per job (median,
    best), each against ``off``; and what tracing adds per run measured alone,
    against off's best CPU per job (the figure a shared machine's noise spares)."""
    base = jobs / median(seconds["off"])
    base_best = jobs / min(seconds["off"])
    base_cpu = min(cpu["off"]) / jobs
    print(
        "| mode | jobs/s median (vs off) | best (vs off) | worker CPU µs/job median | best "
        "| tracing per run, alone: µs (of off's best CPU/job) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for mode in MODES:
        rate, best = jobs / median(seconds[mode]), jobs / min(seconds[mode])
        alone = median(per_run[mode])
        print(
            f"| {mode} | {rate:,.0f} ({(rate / base - 1) * 100:+.1f}%) | "
            f"{best:,.0f} ({(best / base_best - 1) * 100:+.1f}%) | "
            f"{median(cpu[mode]) / jobs * 1e6:,.1f} | {min(cpu[mode]) / jobs * 1e6:,.1f} | "
            f"{alone * 1e6:,.1f} ({alone / base_cpu * 100:.1f}%) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
