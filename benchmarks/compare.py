"""Benchmark worqr against RQ, arq, saq, Dramatiq, Celery and huey on one Redis.

    python -m benchmarks.compare               # full run (about 40 minutes on 2 cores)
    python -m benchmarks.compare --quick       # tiny N, one repetition
    python -m benchmarks.compare --systems worqr,huey --workloads drain,latency
    python -m benchmarks.compare --workloads drain --handler io   # handlers do 1 INCR each

Starts its own redis-server, runs every workload for every installed system
(alternating systems within each repetition), prints Markdown tables, and
writes JSON plus a PNG chart into benchmarks/results/.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from worqr.embedded import EmbeddedRedis, find_redis_server

from . import report
from .adapters import ON_REQUEST, SYSTEMS, installed, load
from .harness import TICKS, cpu_seconds, descendants, machine_info, python
from .record import HANDLERS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
WORKLOADS = ("ceiling", "enqueue", "drain", "latency", "cost", "memory", "recovery", "scale")
BOUNDS = {  # seconds per run (full, quick); the runner stops its workers at the bound
    "ceiling": (300, 60),
    "enqueue": (180, 40),
    "drain": (240, 60),
    "latency": (120, 50),
    "cost": (300, 80),
    "memory": (120, 30),
    "recovery": (150, 60),
    "scale": (400, 60),
}
GLOBAL_SYSTEM = {"ceiling": "redis", "scale": "worqr"}


def _names(text: str, known: tuple[str, ...] | list[str], what: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compare",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="tiny N, one repetition")
    parser.add_argument(
        "--systems",
        default=",".join(name for name in SYSTEMS if name not in ON_REQUEST),
        help="comma-separated",
    )
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated")
    parser.add_argument(
        "--render",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="render saved runs again, run nothing; several runs (of the same handler) "
        "render as one, each part's command and load averages listed",
    )
    parser.add_argument("--reps", type=int, help="repetitions (default 3, quick 1)")
    parser.add_argument(
        "--handler",
        choices=HANDLERS,
        default="noop",
        help="the handler body of every system: noop (record the start) or io "
        "(one Redis round trip of its own, an INCR, then record)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    parser.add_argument(
        "--docs-chart",
        type=Path,
        default=None,
        help="also copy the chart here (e.g. docs/benchmarks.png)",
    )
    return parser.parse_args(argv)


def _cpu_now() -> tuple[float, float, float, float, float]:
    """(wall, busy CPU seconds of the whole machine outside interrupts, its steal
    seconds, its interrupt seconds (loopback traffic is handled in softirq,
    charged to no process), CPU seconds of this process's tree: the harness, its
    Redis, runners and workers, including reaped children)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    busy = (user + nice + system + steal) / TICKS
    mine = cpu_seconds(descendants(os.getpid()))
    return time.monotonic(), busy, steal / TICKS, (irq + softirq) / TICKS, mine


def others_cpu(before: tuple[float, ...], after: tuple[float, ...]) -> dict[str, float]:
    """Cores busy outside the benchmark's own processes between two `_cpu_now`
    readings (other engineers' test suites: the noise; interrupts excluded), and
    cores stolen by the hypervisor or spent in interrupts."""
    wall = max(1e-9, after[0] - before[0])
    mine = after[4] - before[4]
    return {
        "others_cores": max(0.0, (after[1] - before[1]) - mine) / wall,
        "steal_cores": (after[2] - before[2]) / wall,
        "irq_cores": (after[3] - before[3]) / wall,
    }


def run_one(system: str, workload: str, url: str, quick: bool) -> dict[str, Any]:
    """One runner process; its own alarm fires first, SIGTERM/SIGKILL are backstops."""
    bound = BOUNDS[workload][1 if quick else 0]
    workdir = Path(tempfile.mkdtemp(prefix=f"worqr-bench-{workload}-{system}-"))
    command = [
        python(),
        "-m",
        "benchmarks.runner",
        system,
        workload,
        "--url",
        url,
        "--workdir",
        str(workdir),
        "--timeout",
        str(bound),
    ]
    if quick:
        command.append("--quick")
    started = time.monotonic()
    load_before = os.getloadavg()
    cpu_before = _cpu_now()
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = process.communicate(timeout=bound + 30)
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            out, err = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
    noise = others_cpu(cpu_before, _cpu_now())
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    outcome = (
        json.loads(lines[-1][7:])
        if lines
        else {"ok": False, "error": f"runner exited {process.returncode}: {err.strip()[-500:]}"}
    )
    if outcome["ok"]:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        outcome["error"] += f" (logs: {workdir})"
    return {
        "system": system,
        "workload": workload,
        "seconds": time.monotonic() - started,
        "load": [load_before[0], os.getloadavg()[0]],  # 1-minute, before and after
        **noise,
        **outcome,
    }


def _progress(run: dict[str, Any], rep: int) -> None:
    if run["ok"]:
        shown = {
            k: round(v, 2)
            for k, v in run["metrics"].items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        brief = ", ".join(f"{k}={v:g}" for k, v in list(shown.items())[:6])
    else:
        brief = "FAILED: " + run["error"][:300]
    load = "load {:.2f}->{:.2f} others {:.2f}".format(*run["load"], run["others_cores"])
    print(
        f"  [{run['workload']} #{rep + 1}] {run['system']:<15} {run['seconds']:5.1f}s "
        f"{load}  {brief}",
        flush=True,
    )


def _schedule(workloads: list[str], systems: list[str], reps: int) -> list[tuple[str, str, int]]:
    """Every run in order: within one repetition the systems alternate, and
    each repetition starts with a different system."""
    plan = []
    for workload in workloads:
        if workload in GLOBAL_SYSTEM:
            if GLOBAL_SYSTEM[workload] == "redis" or GLOBAL_SYSTEM[workload] in systems:
                plan.append((GLOBAL_SYSTEM[workload], workload, 0))
            continue
        for rep in range(1 if workload == "recovery" else reps):
            shift = rep % len(systems)
            for system in systems[shift:] + systems[:shift]:
                plan.append((system, workload, rep))
    return plan


def _write(args: argparse.Namespace, document: dict[str, Any], lines: list[str]) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = document["started"].replace(":", "").replace("-", "")[:15]
    for name in (f"bench-{stamp}.json", "latest.json"):
        (args.out / name).write_text(json.dumps(document, indent=1, default=str))
    (args.out / "latest.md").write_text("\n".join(lines) + "\n")
    chart = args.out / "latest.png"
    systems = document["systems"]
    machine = document["machine"]
    handler = "no-op" if document.get("handler", "noop") == "noop" else "one-INCR"
    title = (
        f"worqr vs peers, {handler} tasks, W=2 worker processes - {machine['cpu']}, "
        f"{machine['cores']} cores, Redis {machine['redis_server']}"
        + (" (--quick)" if args.quick else "")
    )
    written = [args.out / "latest.json", args.out / "latest.md"]
    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is not installed (pip install -e '.[bench]'): no chart")
    else:
        report.chart(document["summary"], systems, chart, title)
        written.append(chart)
        if args.docs_chart is not None:
            shutil.copyfile(chart, args.docs_chart)
            written.append(args.docs_chart)
    print("\nwrote " + ", ".join(map(str, written)))


def _load(loads: object) -> str:
    return "/".join(f"{x:.2f}" for x in loads) if isinstance(loads, list | tuple) else "?"


def _number(value: object) -> str:
    if isinstance(value, float):
        return f"{int(value):,}" if value.is_integer() else f"{value:,.2f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _header(document: dict[str, Any]) -> list[str]:
    """The machine, the versions, the repetitions, and each part's run."""
    machine = document["machine"]
    return [
        f"Machine: {machine['cpu']}, {machine['cores']} cores, Linux {machine['kernel']}, "
        f"Python {machine['python']}, Redis {machine['redis_server']}, "
        f"redis-py {machine['redis_py']} (hiredis {machine['hiredis']}); "
        f"load average at start {_load(machine.get('load_average_at_start'))}, "
        f"at end {_load(machine.get('load_average_at_end'))}",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in document["versions"].items()),
        f"Repetitions: {document['reps']} (medians){' --quick' if document['quick'] else ''}; "
        f"handler: {document.get('handler', 'noop')}",
        *(
            f"Part {i + 1}: {part['started']} to {part['finished']}, load average "
            f"{_load(part['load_average_at_start'])} at start, "
            f"{_load(part['load_average_at_end'])} at end: "
            + " ".join(str(arg) for arg in (part["argv"] or [])[1:])
            for i, part in enumerate(document.get("parts", []))
        ),
    ]


def _tables(summary: dict[str, Any], systems: list[str]) -> list[str]:
    """Throughput and latency, costs, and the ratios to worqr (and to worqr-jobs)."""
    lines = [
        "",
        "Throughput and latency:",
        "",
        *report.table(summary, systems, report.THROUGHPUT),
        "",
        "Cost per task, memory and recovery:",
        "",
        *report.table(summary, systems, report.COSTS),
        "",
        "Ratios (> 1: worqr better):",
        "",
        *report.ratio_table(summary, systems, report.THROUGHPUT[:5] + report.COSTS[:4]),
    ]
    if "worqr-jobs" in systems:
        lines += [
            "",
            "Ratios, worqr-jobs (> 1: worqr-jobs better):",
            "",
            *report.ratio_table(
                summary,
                systems,
                report.THROUGHPUT[:5] + report.COSTS[:4] + report.COSTS[5:7],
                base="worqr-jobs",
            ),
        ]
    return lines


def _models(models: dict[str, Any]) -> list[str]:
    """How each system ran."""
    if not models:
        return []
    lines = [
        "",
        "How each system ran (W = 2 instances of this, each its own process tree):",
        "",
    ]
    lines += [
        f"- {name}: {m['workers']}; bulk: {m['bulk']}; recovery: {m['recovery']}"
        for name, m in models.items()
    ]
    return lines


def _single_system(summary: dict[str, Any]) -> list[str]:
    """The workloads run by one system only (ceiling, scale): their figures."""
    lines: list[str] = []
    for workload in ("ceiling", "scale"):
        entry = next(iter(summary.get(workload, {}).values()), None)
        if entry:
            lines += ["", f"{workload}:", ""]
            lines += [f"- {k}: {_number(v)}" for k, v in entry.items() if k != "reps"]
    return lines


def _others_cpu(document: dict[str, Any]) -> list[str]:
    """Other processes' CPU and the load average during each workload's runs."""
    loads = [run for run in document.get("runs", []) if "others_cores" in run]
    if not loads:
        return []
    lines = [
        "",
        "Other processes' CPU during each run (cores busy outside the benchmark's own "
        f"process tree, of {document['machine']['cores']}), and the 1-minute load average "
        "(which counts the benchmark's own workers and Redis too):",
        "",
    ]
    for workload in dict.fromkeys(run["workload"] for run in loads):
        mine = sorted(
            (run["others_cores"], max(run["load"]), run["system"], run["rep"])
            for run in loads
            if run["workload"] == workload
        )
        top = mine[-1]
        lines.append(
            f"- {workload}: others median {mine[len(mine) // 2][0]:.2f} cores, "
            f"max {top[0]:.2f} ({top[2]} #{top[3] + 1}); load max "
            f"{max(m[1] for m in mine):.2f}"
        )
    return lines


def _goals(title: str, goals: list[tuple[str, str, bool | None]]) -> list[str]:
    """A list of targets, each met, MISSED or n/a (not measured)."""
    if not goals:
        return []
    lines = ["", f"{title}:", ""]
    for goal, measured, met in goals:
        mark = {True: "met", False: "MISSED", None: "n/a"}[met]
        lines.append(f"- [{mark}] {goal}: {measured}")
    return lines


def _errors(summary: dict[str, Any]) -> list[str]:
    errors = [
        (w, s, e) for w, by in summary.items() for s, m in by.items() for e in m.get("errors", [])
    ]
    if not errors:
        return []
    return ["", "Errors:", ""] + [f"- {w}/{s}: {e[:400]}" for w, s, e in errors]


def render(document: dict[str, Any]) -> list[str]:
    """The report (latest.md): its sections in order."""
    summary, systems = document["summary"], document["systems"]
    return [
        *_header(document),
        *_tables(summary, systems),
        *_models(document.get("models", {})),
        *_single_system(summary),
        *_others_cpu(document),
        *_goals("Targets (issue 6)", report.targets(summary, systems)),
        *_goals("Targets (issue 15, jobs)", report.job_targets(summary, systems)),
        *_errors(summary),
    ]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render is not None:  # tables and chart again, from saved runs
        return finish(args, merge([json.loads(path.read_text()) for path in args.render]))
    wanted = _names(args.systems, list(SYSTEMS), "systems")
    workloads = _names(args.workloads, WORKLOADS, "workloads")
    systems = [name for name in wanted if installed(name)]
    missing = [name for name in wanted if name not in systems]
    if missing:
        print(f"not installed (pip install -e '.[bench]'): {', '.join(missing)}")
    reps = args.reps or (1 if args.quick else 3)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    os.environ["BENCH_HANDLER"] = args.handler  # runners and their workers inherit it
    with EmbeddedRedis() as server:
        os.environ["BENCH_REDIS_URL"] = server.url  # adapters' module-level apps
        adapters = {name: load(name) for name in systems}
        document: dict[str, Any] = {
            "started": started,
            "argv": sys.argv,
            "quick": args.quick,
            "reps": reps,
            "handler": args.handler,
            "workers": 2,
            "systems": systems,
            "workloads": workloads,
            "machine": machine_info(server.binary or find_redis_server()),
            "versions": {k: v for a in adapters.values() for k, v in a.versions().items()},
            "models": {
                name: {"workers": a.model, "bulk": a.bulk_api, "recovery": a.recovery_note}
                for name, a in adapters.items()
            },
        }
        print("\n".join(render({**document, "summary": {}})[:3]), flush=True)
        runs = []
        for system, workload, rep in _schedule(workloads, systems, reps):
            run = run_one(system, workload, server.url, args.quick)
            runs.append({**run, "rep": rep})
            _progress(run, rep)
    document["runs"] = runs
    document["machine"]["load_average_at_end"] = os.getloadavg()
    document["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    return finish(args, document)


def merge(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """Several saved runs as one document: their runs together, systems and
    workloads in first-seen order, and a part per run (command, times, load)."""
    if len(documents) == 1:
        return documents[0]
    handlers = {document.get("handler", "noop") for document in documents}
    if len(handlers) > 1:
        raise SystemExit(f"runs of different handlers do not merge: {sorted(handlers)}")
    first, last = documents[0], documents[-1]
    merged = {**first, "runs": [], "systems": [], "workloads": [], "models": {}, "versions": {}}
    merged["parts"] = []
    for document in documents:
        merged["runs"] += document["runs"]
        for key in ("systems", "workloads"):
            merged[key] += [n for n in document[key] if n not in merged[key]]
        merged["models"].update(document.get("models", {}))
        merged["versions"].update(document.get("versions", {}))
        machine = document["machine"]
        merged["parts"].append(
            {
                "argv": document.get("argv"),
                "started": document.get("started"),
                "finished": document.get("finished"),
                "load_average_at_start": machine.get("load_average_at_start"),
                "load_average_at_end": machine.get("load_average_at_end"),
            }
        )
    merged["machine"] = {
        **first["machine"],
        "load_average_at_end": last["machine"].get("load_average_at_end"),
    }
    merged["reps"] = max(document["reps"] for document in documents)
    merged["finished"] = last.get("finished")
    return merged


def finish(args: argparse.Namespace, document: dict[str, Any]) -> int:
    """Summarise the runs, print the tables, write JSON, Markdown and the chart."""
    document["summary"] = report.summarise(document["runs"])
    lines = render(document)
    document["targets"] = report.targets(document["summary"], document["systems"])
    document["job_targets"] = report.job_targets(document["summary"], document["systems"])
    print("\n" + "\n".join(lines))
    _write(args, document, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
