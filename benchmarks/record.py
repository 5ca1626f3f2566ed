"""What every benchmark task does: append one fixed-width line to a file.

Workers of every system run the same handler body, so the harness learns when
and where each task started without adding a single Redis command: one
``O_APPEND`` write per task into ``$BENCH_RECORD_DIR/<pid>.rec``. The harness
counts lines by file size (`LINE` bytes each) and parses them at the end.

``$BENCH_HANDLER`` picks the handler body: ``noop`` (the default: only the
record) or ``io``: one Redis round trip of the handler's own first (``INCR`` of
`IO_KEY`), on a client the process creates once (sync handlers call `handle`,
async handlers `ahandle`, on an asyncio client), then the record.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

LINE = 53  # 20-char task argument, start time, pid, three separators
HOLD_PREFIX = "hold"  # tasks whose argument starts with this hold their worker
HANDLERS = ("noop", "io")
IO_KEY = "bench:io"  # the counter the io handler increments

_files: dict[int, int] = {}  # pid -> fd; a forked child must open its own file
_clients: dict[int, Any] = {}  # pid -> the io handler's sync client (thread-safe pool)
_async_clients: dict[int, Any] = {}  # pid -> its asyncio client (one loop per process)
_lock = threading.Lock()  # handler threads of one process share one client


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


def handler_kind() -> str:
    kind = os.environ.get("BENCH_HANDLER", "noop") or "noop"
    if kind not in HANDLERS:
        raise ValueError(f"BENCH_HANDLER must be one of {', '.join(HANDLERS)}, got {kind!r}")
    return kind


_IO = handler_kind() == "io"  # read once: the handler body is fixed per process


def _url() -> str:
    return os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")


def handle(arg: str) -> float:
    """A sync handler's body: (io: one INCR on the process's sync client), then
    `record`. Returns what `record` returns."""
    if _IO:
        pid = os.getpid()
        client = _clients.get(pid)
        if client is None:  # once per process (a forked child makes its own)
            import redis

            with _lock:
                client = _clients.get(pid) or redis.Redis.from_url(_url())
                _clients[pid] = client
        client.incr(IO_KEY)
    return record(arg)


async def ahandle(arg: str) -> float:
    """An async handler's body: (io: one INCR on the process's asyncio client,
    created on first use inside the worker's event loop), then `record`."""
    if _IO:
        pid = os.getpid()
        client = _async_clients.get(pid)
        if client is None:
            import redis.asyncio

            client = _async_clients[pid] = redis.asyncio.Redis.from_url(_url())
        await client.incr(IO_KEY)
    return record(arg)


def stamp() -> str:
    """A task argument carrying the enqueue time (the latency workload)."""
    return f"{time.monotonic():020.6f}"


def index_arg(i: int) -> str:
    return f"{i:020d}"
