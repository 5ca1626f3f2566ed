"""One run of one workload for one system, in its own process.

`benchmarks.compare` starts one runner per run, so every system imports its
own package into a fresh interpreter and a run that hangs is ended by its
deadline (an alarm in here, then SIGTERM from outside) after its workers are
stopped. Prints one line: ``RESULT <json>``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from .adapters import load
from .harness import BenchTimeout, Probe
from .mesh import ceiling, scale
from .workloads import PER_SYSTEM, Run

GLOBAL = {"ceiling": ceiling, "scale": scale}  # workloads that are not per system


def _deadline(*_: Any) -> None:
    raise BenchTimeout("the run exceeded its time bound")


def run(system: str, workload: str, url: str, workdir: Path, quick: bool) -> dict[str, Any]:
    probe = Probe(url)
    try:
        probe.reset()
        if workload in GLOBAL:
            return GLOBAL[workload](probe, quick)
        adapter = load(system)
        return PER_SYSTEM[workload](Run(adapter, probe, workdir, quick))
    finally:
        probe.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.runner")
    parser.add_argument("system")
    parser.add_argument("workload")
    parser.add_argument("--url", required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--timeout", type=int, required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    os.environ["BENCH_REDIS_URL"] = args.url  # adapters' module-level apps connect here
    signal.signal(signal.SIGALRM, _deadline)
    signal.signal(signal.SIGTERM, _deadline)
    signal.alarm(args.timeout)
    try:
        metrics = run(args.system, args.workload, args.url, args.workdir, args.quick)
        outcome: dict[str, Any] = {"ok": True, "metrics": metrics}
    except Exception as error:
        traceback.print_exc(file=sys.stderr)
        outcome = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    finally:
        signal.alarm(0)
    print("RESULT " + json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
