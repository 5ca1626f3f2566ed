"""Shared machinery: the Redis server and its counters, worker process trees,
the completion records, statistics and the machine's description."""

from __future__ import annotations

import compileall
import contextlib
import functools
import importlib.metadata
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis

from .record import LINE

ADMIN_COMMANDS = frozenset(
    {"info", "config|resetstat", "config|get", "config|set", "flushall", "monitor", "ping"}
)
TICKS = os.sysconf("SC_CLK_TCK")


class BenchTimeout(Exception):
    """A workload did not finish within its time bound."""


def wait_for(predicate: Callable[[], object], timeout: float, interval: float = 0.02) -> bool:
    """Poll ``predicate`` until it is truthy (True) or ``timeout`` passes (False)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


# -- statistics ------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


# -- the machine -------------------------------------------------------------------


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def version_of(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info(binary: str) -> dict[str, object]:
    banner = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, check=False
    ).stdout
    match = re.search(r"v=(\S+)", banner)
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "redis_server": match[1] if match else banner.strip(),
        "redis_py": version_of("redis"),
        "hiredis": version_of("hiredis"),
        "load_average_at_start": os.getloadavg(),
    }


# -- Redis counters ------------------------------------------------------------------


@dataclass
class Snapshot:
    """Server counters at one moment (INFO commandstats, cpu, memory)."""

    calls: Counter[str]
    usec: Counter[str]
    cpu: float  # seconds of server CPU, user + system
    memory: int  # used_memory bytes
    at: float = field(default_factory=time.monotonic)

    def commands_since(self, before: Snapshot) -> Counter[str]:
        delta = self.calls - before.calls
        for name in ADMIN_COMMANDS:
            delta.pop(name, None)
        return delta


class Probe:
    """An admin connection to the benchmark's server: reset it, read its counters."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = redis.Redis.from_url(url)

    def close(self) -> None:
        self.client.close()

    def reset(self) -> None:
        """Empty the server and zero its statistics between runs."""
        self.client.flushall()
        self.client.config_resetstat()

    def snapshot(self) -> Snapshot:
        stats = self.client.info("commandstats")
        calls: Counter[str] = Counter()
        usec: Counter[str] = Counter()
        for key, value in stats.items():
            name = key.removeprefix("cmdstat_")
            calls[name] = int(value["calls"])
            usec[name] = int(value["usec"])
        cpu = self.client.info("cpu")
        memory = self.client.info("memory")
        total = float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])
        return Snapshot(calls, usec, total, int(memory["used_memory"]))

    def monitor(self) -> Monitor:
        kwargs = self.client.connection_pool.connection_kwargs
        return Monitor(kwargs.get("host", "127.0.0.1"), int(kwargs.get("port", 6379)))


class Monitor:
    """Counts the commands clients send (a script call counts once; the commands
    a script runs show as ``[0 lua]`` and are counted apart). MONITOR slows
    Redis, so it only runs in passes that measure nothing else."""

    def __init__(self, host: str, port: int) -> None:
        self._sock = socket.create_connection((host, port))
        self._sock.sendall(b"MONITOR\r\n")
        self.client: Counter[str] = Counter()
        self.scripted: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        buffer = b""
        self._sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                chunk = self._sock.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\r\n")
            for line in lines:
                self._count(line)

    def _count(self, line: bytes) -> None:
        _, _, rest = line.partition(b"] ")  # '+1700000000.1 [0 127.0.0.1:5000] "cmd" ...'
        if not rest:
            return
        name = rest.split(b" ", 1)[0].strip(b'"').decode(errors="replace").lower()
        target = self.scripted if b" lua] " in line else self.client
        target[name] += 1

    def close(self) -> None:
        time.sleep(0.2)  # let the last lines arrive
        self._stop.set()
        self._thread.join(timeout=2)
        self._sock.close()
        self.client.pop("monitor", None)
        for name in ADMIN_COMMANDS:
            self.client.pop(name, None)


# -- worker processes ---------------------------------------------------------------


def _proc_stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()  # fields from "state" on


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _proc_stat(int(entry))
            if fields is not None:
                tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it (some workers fork into new sessions)."""
    tree = _children()
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, ()))
    return found


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU of the processes, including their waited-for children."""
    total = 0
    for pid in pids:
        fields = _proc_stat(pid)
        if fields is not None:  # utime, stime, cutime, cstime are fields 14-17
            total += sum(int(value) for value in fields[11:15])
    return total / TICKS


class Workers:
    """Worker instances of one system, each its own process tree, started by the
    harness and ended only by the pids it started (and their descendants)."""

    def __init__(
        self, commands: Sequence[Sequence[str]], env: dict[str, str], logs: Path, cwd: Path
    ) -> None:
        self.commands = [list(command) for command in commands]
        self.env = env
        self.logs = logs
        self.cwd = cwd
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        compile_worqr()
        for i, command in enumerate(self.commands):
            with open(self.logs / f"worker-{i}.log", "ab") as log:
                self.processes.append(
                    subprocess.Popen(
                        command,
                        env=self.env,
                        cwd=self.cwd,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )

    def all_pids(self) -> list[int]:
        return [pid for process in self.processes for pid in descendants(process.pid)]

    def cpu(self) -> float:
        return cpu_seconds(self.all_pids())

    def instance_of(self, pid: int) -> int | None:
        """Index of the instance whose tree holds ``pid``."""
        for i, process in enumerate(self.processes):
            if pid in descendants(process.pid):
                return i
        return None

    def kill(self, index: int) -> None:
        """SIGKILL one instance and everything below it, at once."""
        for pid in descendants(self.processes[index].pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.processes[index].wait(timeout=5)

    def alive(self) -> bool:
        return all(process.poll() is None for process in self.processes)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM every instance (warm shutdown), then SIGKILL what is left."""
        trees = {process.pid: descendants(process.pid) for process in self.processes}
        for process in self.processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
        for pids in trees.values():
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)

    def log_tail(self, lines: int = 15) -> str:
        tails = []
        for path in sorted(self.logs.glob("worker-*.log")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            tails.append(f"--- {path.name}\n" + "\n".join(text))
        return "\n".join(tails)


# -- completion records ----------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    arg: str
    start: float  # time.monotonic() in the worker
    pid: int


class Records:
    """The lines worker processes append (see `benchmarks.record`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def _files(self) -> Iterator[Path]:
        return self.directory.glob("*.rec")

    def count(self) -> int:
        total = 0
        for path in self._files():
            with contextlib.suppress(OSError):
                total += path.stat().st_size // LINE
        return total

    def read(self) -> list[Record]:
        found = []
        for path in self._files():
            data = path.read_bytes()
            for i in range(0, len(data) - LINE + 1, LINE):
                arg, start, pid = data[i : i + LINE].decode().split()
                found.append(Record(arg, float(start), int(pid)))
        return found

    def wait(self, count: int, timeout: float, alive: Callable[[], bool] | None = None) -> bool:
        """Wait until ``count`` tasks started (False on timeout or dead workers)."""
        deadline = time.monotonic() + timeout
        while self.count() < count:
            if time.monotonic() >= deadline or (alive is not None and not alive()):
                return self.count() >= count
            time.sleep(0.02)
        return True


@functools.cache
def compile_worqr() -> None:
    """Write worqr's bytecode cache before any worker starts. Peers are imported
    from site-packages, whose bytecode pip wrote; worqr is imported from this
    tree, and where PYTHONDONTWRITEBYTECODE is set no import writes the cache, so
    each worker would compile all of worqr from source at start (a third of a
    second here), which the drain's start-inclusive rate counts against it.
    Once per process; `workloads.Run` calls it before any clock starts."""
    worqr_dir = Path(__file__).resolve().parent.parent / "worqr"
    compileall.compile_dir(worqr_dir, quiet=1)


def python() -> str:
    """The interpreter that runs the harness runs every worker too."""
    return sys.executable
