"""What every benchmark task does: append one fixed-width line to a file.

Workers of every system run the same handler body, so the harness learns when
and where each task started without adding a single Redis command: one
``O_APPEND`` write per task into ``$BENCH_RECORD_DIR/<pid>.rec``. The harness
counts lines by file size (`LINE` bytes each) and parses them at the end.
"""

from __future__ import annotations

import os
import time

LINE = 53  # 20-char task argument, start time, pid, three separators
HOLD_PREFIX = "hold"  # tasks whose argument starts with this hold their worker

_files: dict[int, int] = {}  # pid -> fd; a forked child must open its own file


def _fd(pid: int) -> int:
    fd = _files.get(pid)
    if fd is None:
        directory = os.environ["BENCH_RECORD_DIR"]
        path = os.path.join(directory, f"{pid}.rec")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        _files[pid] = fd
    return fd


def record(arg: str) -> float:
    """Note that the task ``arg`` starts now; returns how long it should hold its
    worker (seconds; 0 for the no-op tasks of every workload but recovery)."""
    now = time.monotonic()  # system-wide on Linux: comparable across processes
    pid = os.getpid()
    os.write(_fd(pid), f"{arg[:20]:>20} {now:020.6f} {pid:010d}\n".encode())
    if arg.startswith(HOLD_PREFIX):
        return float(os.environ.get("BENCH_HOLD_SECONDS", "600"))
    return 0.0


def stamp() -> str:
    """A task argument carrying the enqueue time (the latency workload)."""
    return f"{time.monotonic():020.6f}"


def index_arg(i: int) -> str:
    return f"{i:020d}"
