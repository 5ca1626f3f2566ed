"""Every ```python block of the README runs, against the test server.

Blocks fenced as ```python norun are illustrations of long-running programs
(a worker's `run()`); `examples/` holds their runnable versions.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support import ROOT

README = ROOT / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DEFAULT_URL = "redis://127.0.0.1:6379/0"


def blocks() -> list[str]:
    return BLOCK.findall(README.read_text("utf-8"))


def test_readme_has_runnable_blocks() -> None:
    fences = README.read_text("utf-8").splitlines().count("```python")  # not `python norun`
    assert len(blocks()) == fences > 0  # each one is found, so test_readme_block_runs runs it


@pytest.mark.parametrize("index", range(len(blocks())))
def test_readme_block_runs(index: int, redis_url: str, prefix: str) -> None:
    code = blocks()[index].replace(DEFAULT_URL, redis_url)
    # Isolate the block's keys from other tests: the README uses the default prefix.
    code = code.replace("worqr.Worqr(", f"worqr.Worqr(prefix={prefix!r}, url=", 1)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_quick_start_processes_tasks_in_order(redis_url: str, prefix: str) -> None:
    code = blocks()[0].replace(DEFAULT_URL, redis_url)
    code = code.replace("worqr.Worqr(", f"worqr.Worqr(prefix={prefix!r}, url=", 1)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.splitlines() == [
        "sending to alice@example.com",
        "sending to bob@example.com",
        "sending to carol@example.com",
    ], result.stderr
