"""A smoke run of the benchmark harness (`python -m benchmarks.compare --quick`):
worqr's tasks and jobs through every workload that starts workers, every
installed peer through the drain workload (with the no-op and the io handler),
and the other benchmark scripts with tiny sizes. Proves the harness runs, not
how fast anything is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.harness import Probe
from benchmarks.mesh import _wakeups
from tests.support import ROOT
from worqr.embedded import EmbeddedRedis

PEERS = "raw-list,rq,rq-simple,arq,saq,dramatiq,celery,celery-threads,huey"


def compare(tmp_path: Path, *args: str, timeout: float = 150) -> dict[str, Any]:
    out = tmp_path / "results"
    command = [sys.executable, "-m", "benchmarks.compare", "--quick", "--out", str(out), *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document: dict[str, Any] = json.loads((out / "latest.json").read_text())
    failed = [(r["system"], r["workload"], r.get("error")) for r in document["runs"] if not r["ok"]]
    assert not failed, failed
    return document


@pytest.mark.slow
def test_worqr_runs_through_every_worker_workload(tmp_path: Path) -> None:
    workloads = "enqueue,drain,latency,cost,memory,recovery"
    document = compare(tmp_path, "--systems", "worqr", "--workloads", workloads)
    metrics = {run["workload"]: run["metrics"] for run in document["runs"]}
    assert sorted(metrics) == sorted(workloads.split(","))
    drain = metrics["drain"]
    assert drain["completed"] == drain["distinct"] == drain["n"]  # each task ran exactly once
    assert metrics["latency"]["missing"] == 0
    assert 0 < metrics["latency"]["p50_ms"] < 1000
    assert metrics["latency"]["worker_cpu_us"] > 0 and metrics["latency"]["redis_cpu_us"] > 0
    assert metrics["enqueue"]["each_per_s"] > 0 and metrics["enqueue"]["bulk_per_s"] > 0
    assert metrics["cost"]["client_commands"] > 0 and metrics["cost"]["worker_cpu_us"] > 0
    assert metrics["recovery"]["recovered"] and metrics["recovery"]["seconds"] < 10
    assert 0 <= metrics["memory"]["bytes_per_task"] < 100
    table = (tmp_path / "results" / "latest.md").read_text()
    assert "| worqr |" in table and "Targets (issue 6)" in table


@pytest.mark.slow
def test_worqr_jobs_run_through_every_worker_workload(tmp_path: Path) -> None:
    """The job adapter (`submit`, `submit_many`, a sync `@worker.job` handler)
    through the same workloads as tasks, and the job targets in the report."""
    workloads = "enqueue,drain,latency,cost,memory,recovery"
    document = compare(tmp_path, "--systems", "worqr-jobs", "--workloads", workloads)
    metrics = {run["workload"]: run["metrics"] for run in document["runs"]}
    assert sorted(metrics) == sorted(workloads.split(","))
    drain = metrics["drain"]
    assert drain["completed"] == drain["distinct"] == drain["n"]
    assert (drain["handler"], drain["io_calls"]) == ("noop", 0)
    assert metrics["latency"]["missing"] == 0
    assert metrics["enqueue"]["each_per_s"] > 0 and metrics["enqueue"]["bulk_per_s"] > 0
    assert metrics["recovery"]["recovered"] and metrics["recovery"]["seconds"] < 10
    # A queued job holds a record beside its payload; a finished one is retained
    # (its record and a result of type none) for result_ttl.
    assert metrics["memory"]["bytes_per_task"] > 0
    assert metrics["memory"]["retained_bytes_per_task"] > 100


@pytest.mark.slow
def test_every_system_drains_with_the_io_handler(tmp_path: Path) -> None:
    """``--handler io``: every handler (sync clients and asyncio ones) does one
    INCR of its own per task, and every task still runs exactly once."""
    systems = f"worqr,worqr-async,worqr-jobs,worqr-jobs-async,{PEERS}"
    document = compare(
        tmp_path, "--systems", systems, "--workloads", "drain", "--handler", "io", timeout=300
    )
    assert document["handler"] == "io"
    for run in document["runs"]:
        drain = run["metrics"]
        assert drain["completed"] == drain["distinct"] == drain["n"], run["system"]
        assert drain["handler"] == "io"
        assert drain["io_calls"] == drain["n"], run["system"]


@pytest.mark.slow
def test_installed_peers_drain_every_task(tmp_path: Path) -> None:
    document = compare(tmp_path, "--systems", PEERS, "--workloads", "drain")
    assert "raw-list" in document["systems"]  # needs only redis-py: always there
    assert [run["system"] for run in document["runs"]] == document["systems"]
    for run in document["runs"]:
        drain = run["metrics"]
        assert drain["completed"] == drain["distinct"] == drain["n"], run["system"]


@pytest.mark.sentinel
@pytest.mark.slow
def test_durability_benchmark_runs() -> None:
    """`python -m benchmarks.durability` on its own Sentinel setup, tiny sizes."""
    command = [sys.executable, "-m", "benchmarks.durability"]
    command += ["--tasks", "200", "--bulk-tasks", "2000", "--repeat", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "enqueue: wait_replicas=1 runs at" in done.stdout
    assert "enqueue_many: wait_replicas=1 runs at" in done.stdout


def test_wakeups_per_task_do_not_grow_with_idle_workers(fresh_redis: EmbeddedRedis) -> None:
    """The scale workload's herd figure: each enqueue wakes one idle worker, with
    4 or 40 of them waiting (a broadcast would send 4 or 40 per task)."""
    probe = Probe(fresh_redis.url)
    try:
        for idle in (4, 40):
            herd = _wakeups(probe, idle)
            assert herd["per_task"] == 1.0, (idle, herd)
            assert herd["idle_after"] == idle - herd["tasks"]  # the rest still wait
    finally:
        probe.close()


@pytest.mark.slow
def test_drain_concurrency_benchmark_runs() -> None:
    """`python -m benchmarks.drain_concurrency` with tiny sizes: a row per handler
    kind and concurrency, each with a positive rate (every task started)."""
    command = [sys.executable, "-m", "benchmarks.drain_concurrency"]
    command += ["--tasks", "200", "--reps", "1", "--concurrency", "2,4"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [
        line.split("|")[1:-1]
        for line in done.stdout.splitlines()
        if line[:7] in ("| sync ", "| async")
    ]
    assert [(kind.strip(), level.strip()) for kind, level, _, _ in rows] == [
        ("sync", "2"),
        ("sync", "4"),
        ("async", "2"),
        ("async", "4"),
    ]
    assert all(float(rate.replace(",", "")) > 0 for _, _, rate, _ in rows)


@pytest.mark.slow
def test_delayed_benchmark_runs() -> None:
    """`python -m benchmarks.delayed` with tiny sizes: every delayed job started,
    none before it was due, and a cost row per operation at both depths."""
    command = [sys.executable, "-m", "benchmarks.delayed", "--jobs", "100", "--window", "1"]
    command += ["--lead", "1", "--bursts", "1", "--burst-size", "20"]
    command += ["--deep", "2000", "--ops", "30", "--rounds", "2"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "120 jobs, 120 started (120 distinct)" in out
    tables = [line.split("|")[1:-1] for line in out.splitlines() if line[:2] == "| "]
    starts = {cells[0].strip(): cells for cells in tables if len(cells) == 8}  # start - due
    assert starts["staggered"][-1].strip() == starts["burst"][-1].strip() == "0"  # none early
    costs = {cells[0].strip() for cells in tables if len(cells) == 9}
    assert {"submit", "submit_delayed", "cancel", "take", "finish", "promote"} <= costs
    assert "shallow queue 10 delayed, deep 2,000 delayed" in out


def test_flows_benchmark_runs() -> None:
    """`python -m benchmarks.flows` with tiny sizes: every hop measured, the fan-in
    ran its parent once with every child's result."""
    command = [sys.executable, "-m", "benchmarks.flows", "--chains", "10", "--children", "20"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "hop latency, 10 of 10 chains" in done.stdout
    assert "fan-in of 20 children (result 20)" in done.stdout


@pytest.mark.slow
def test_groups_benchmark_runs() -> None:
    """`python -m benchmarks.groups` with tiny sizes: a table and a verdict per
    target, every small tenant's job started, none after `pause` returned."""
    command = [sys.executable, "-m", "benchmarks.groups", "--flood", "2000", "--groups", "300"]
    command += ["--ops", "20", "--rounds", "2", "--pause-jobs", "8000", "--pause-after", "0.5"]
    command += ["--memory-groups", "2000"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    verdicts = [line.split(":")[0] for line in out.splitlines() if line[:5] in ("PASS:", "FAIL:")]
    assert len(verdicts) == 4, out
    tables = [line.split("|")[1:-1] for line in out.splitlines() if line[:2] == "| "]
    rows = {cells[0].strip(): cells for cells in tables}
    for run in ("flood, groups", "no flood, groups", "flood, no groups (FIFO)"):
        started, _, submitted = rows[run][1].strip().partition(" of ")
        assert started == submitted and int(submitted.replace(",", "")) > 0, rows[run]
    costs = {(cells[0].strip(), cells[1].strip()) for cells in tables if len(cells) == 9}
    assert {("300 groups", "take"), ("300, cap 1 groups", "submit")} <= costs
    assert rows["started after pause returned, before resume"][1].strip() == "0"
    assert int(rows["keys"][1].replace(",", "")) > 0  # the memory table
