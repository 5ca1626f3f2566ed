"""A smoke run of `python -m benchmarks.http` with tiny sizes: it starts its
server and worker, measures, prints both figures and exits 0. Proves the
benchmark runs, not how fast anything is."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support import ROOT


@pytest.mark.slow
def test_the_http_benchmark_runs(redis_url: str) -> None:
    command = [sys.executable, "-m", "benchmarks.http", "--url", redis_url]
    command += ["--submits", "100", "--samples", "20"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert re.search(r"submits per second over HTTP: [\d,]+ \(100 sequential", done.stdout)
    assert re.search(r"submit -> start through HTTP: p50 [\d.]+ ms, p99 [\d.]+ ms", done.stdout)
    assert "(20 jobs, one at a time)" in done.stdout
