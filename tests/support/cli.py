"""Running the `worqr` command line in subprocesses (stop them with
`tests.support.processes.stop`)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import ROOT

WORQR = [sys.executable, "-m", "worqr"]


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("WORQR_REDIS_URL", None)  # tests always say which Redis they mean
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_cli_bytes(
    *args: str,
    input: bytes | None = None,
    timeout: float = 60,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `worqr ARGS...` to completion; stdout and stderr as bytes."""
    return subprocess.run(
        [*WORQR, *args],
        input=input,
        capture_output=True,
        timeout=timeout,
        env=env or cli_env(),
        cwd=ROOT,
    )


def run_cli(
    *args: str,
    input: bytes | None = None,
    timeout: float = 60,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `worqr ARGS...` to completion; stdout and stderr as text."""
    result = run_cli_bytes(*args, input=input, timeout=timeout, env=env)
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
    """Start `worqr ARGS...` in the background; stop it with `processes.stop`."""
    options: dict[str, object] = {
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "env": env or cli_env(),
        "cwd": ROOT,
    }
    options.update(popen)
    return subprocess.Popen([*WORQR, *args], **options)  # type: ignore[call-overload]
