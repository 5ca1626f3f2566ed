"""Child processes that do not outlive their parent, even a SIGKILLed one.

On Linux a child can ask the kernel for a signal when its parent dies
(``prctl(PR_SET_PDEATHSIG)``); the request survives ``exec``, so it works for
programs that cannot watch a pipe, such as ``redis-server``. `die_with_parent`
returns the ``preexec_fn`` that makes it, for ``subprocess.Popen``; `spawn`
starts such a child with its output in a log file.

The kernel sends the signal when the *thread* that forked the child ends, not
the process. So it is only asked for on the main thread, which ends with the
process; a child started from another thread (a thread pool's, say) would
otherwise be stopped when that thread ends. Elsewhere (macOS, a non-main
thread) it returns None: the child then outlives a SIGKILLed parent, as any
child does.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` after which the child gets ``sig`` when this process
    dies; None where that cannot be arranged (see the module's docstring)."""
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]  # prctl(2) reads unsigned longs
    prctl.restype = ctypes.c_int
    parent = os.getpid()

    def preexec() -> None:  # runs in the child, between fork and exec
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: too late to be told
            os.kill(os.getpid(), sig)

    return preexec


def spawn(
    args: Sequence[str],
    log_path: str | Path,
    *,
    append: bool = False,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``args`` as a child that reads nothing, writes its output and its
    errors to the file ``log_path`` (appended to, or written anew) and gets
    SIGTERM when this process dies, even by SIGKILL (`die_with_parent`)."""
    with open(log_path, "ab" if append else "wb") as log:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=die_with_parent(),
        )
