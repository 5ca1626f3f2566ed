"""Running the `worqr` command line in subprocesses, and cleaning up after it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORQR = [sys.executable, "-m", "worqr"]


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("WORQR_REDIS_URL", None)  # tests always say which Redis they mean
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_cli(
    *args: str,
    input: bytes | None = None,
    timeout: float = 60,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `worqr ARGS...` to completion; stdout and stderr as text."""
    result = subprocess.run(
        [*WORQR, *args],
        input=input,
        capture_output=True,
        timeout=timeout,
        env=env or cli_env(),
        cwd=ROOT,
    )
    return subprocess.CompletedProcess(
        result.args,
        result.returncode,
        result.stdout.decode("utf-8", "replace"),
        result.stderr.decode("utf-8", "replace"),
    )


def assert_one_line_error(
    result: subprocess.CompletedProcess[str], code: int, *fragments: str
) -> None:
    """The command failed with ``code`` and said so in one line holding each fragment."""
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("worqr"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def start_cli(
    *args: str, env: dict[str, str] | None = None, **popen: object
) -> subprocess.Popen[bytes]:
    """Start `worqr ARGS...` in the background; stop it with `kill_tree`."""
    options: dict[str, object] = {
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "env": env or cli_env(),
        "cwd": ROOT,
    }
    options.update(popen)
    return subprocess.Popen([*WORQR, *args], **options)  # type: ignore[call-overload]


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


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL a process the test started (if still running) and reap it."""
    if process.poll() is None:
        process.kill()
    process.wait(10)
    for stream in (process.stdout, process.stderr, process.stdin):
        if stream is not None:
            stream.close()
