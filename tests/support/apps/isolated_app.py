"""Isolated handlers for the isolation tests (`worker.job(..., isolated=True)`).

Each runs in a child process of the worker; most return or record what that
child can see: its pid, its attempt, what it printed. Queue names say what the
handler does. ``worker`` isolates them one by one; ``plain_worker`` registers
the same functions without isolation (`Worker(isolated=True)` isolates them all).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from pathlib import Path

import worqr

worker = worqr.Worker(concurrency=4)
_leaked: list[bytes] = []


def echo(payload: str | bytes) -> str | bytes:
    return payload


def pid(payload: str) -> str:
    """This child's pid and the job's attempt, e.g. ``"1234 1"``."""
    return f"{os.getpid()} {worqr.current_job().attempt}"


def flaky(payload: str) -> str:
    """Fails its first attempt (a ValueError), then says which attempt it is."""
    job = worqr.current_job()
    if job.attempt == 1:
        raise ValueError(f"first try of {job.id}")
    return f"attempt {job.attempt}"


def sleeper(payload: str) -> str:
    """``<seconds>:<marker path>``: notes its child's pid in ``<marker>.pids``
    (and ``<marker>.overlap`` when an earlier run's child is still alive then),
    reports the pid as progress, sleeps, then writes the marker (never, when
    its child is stopped first)."""
    seconds, _, marker = payload.partition(":")
    if marker != "/dev/null":
        pids = Path(f"{marker}.pids")
        earlier = pids.read_text().split() if pids.exists() else []
        if any(_alive(int(pid)) for pid in earlier):
            Path(f"{marker}.overlap").write_text(" ".join(earlier))
        with pids.open("a") as out:
            out.write(f"{os.getpid()}\n")
    worqr.current_job().progress(str(os.getpid()))
    time.sleep(float(seconds))
    Path(marker).write_text(str(os.getpid()))
    return "slept"


def _alive(pid: int) -> bool:
    # Not tests.support.processes.pid_alive: importing the tests' support package
    # grows every child, and the memory-recycling test measures these children.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def segfault(payload: str) -> str:
    """Crashes its child (a read of address 0): SIGSEGV."""
    ctypes.string_at(0)
    return "unreachable"


def leak(payload: str) -> str:
    """Keeps ``<megabytes>`` MB more in its child; returns the child's pid."""
    _leaked.append(b"x" * (int(payload) << 20))
    return str(os.getpid())


def report(payload: str) -> str:
    """Reports progress ``half``, prints a line to stdout and one to stderr."""
    worqr.current_job().progress("half")
    print(f"to stdout from {payload}")
    print(f"to stderr from {payload}", file=sys.stderr)
    return "reported"


def refuse(payload: str) -> object:
    """``fail``: raises worqr.Fail; ``retry``: worqr.Retry(0.1); else returns a dict."""
    if payload == "fail":
        raise worqr.Fail("no")
    if payload == "retry" and worqr.current_job().attempt == 1:
        raise worqr.Retry(delay=0.1)
    return {"not": "storable"} if payload != "retry" else "retried"


def hold(payload: str) -> str:
    """``<seconds>:<path>``: writes its child's pid to ``path`` as it starts,
    sleeps, then returns the pid (any handler: it reads no job)."""
    seconds, _, path = payload.partition(":")
    Path(path).write_text(str(os.getpid()))
    time.sleep(float(seconds))
    return str(os.getpid())


def task(payload: str) -> None:
    """A task queue's handler: appends its pid and task to the file it names."""
    path, _, text = payload.partition(":")
    with open(path, "a") as out:
        out.write(f"{os.getpid()} {text} {worqr.current_process().queue}\n")


for queue, function in {
    "echo": echo,
    "pid": pid,
    "flaky": flaky,
    "segfault": segfault,
    "leak": leak,
    "report": report,
    "refuse": refuse,
}.items():
    worker.job(queue, isolated=True)(function)
worker.job("sleeper", isolated=True, timeout=0.5)(sleeper)
worker.handler("tasks", isolated=True)(task)
