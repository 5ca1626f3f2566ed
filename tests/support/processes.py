"""Processes a test started: is a pid alive, its children, kill them, reap them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s children (Linux /proc), [] once it is gone."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def kill_pids(pids: Sequence[int]) -> None:
    """SIGKILL each pid that is still alive (teardown of processes a test started)."""
    for pid in pids:
        if pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def stop(process: subprocess.Popen[Any]) -> None:
    """SIGKILL a process the test started (if still running), reap it and close
    its pipes."""
    if process.poll() is None:
        process.kill()
    process.wait(10)
    for stream in (process.stdout, process.stderr, process.stdin):
        if stream is not None:
            stream.close()
