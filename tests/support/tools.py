"""Programs some tests need besides Python and the server wheels, and saying
plainly when one is missing.

A test that needs one is marked ``@pytest.mark.needs("prometheus")`` (or calls
`require` when it finds out at run time, e.g. a redis-server built without
TLS). When the program is missing the test is skipped, and the end of the run
says in one line per program what was not run and how to get it. With
``WORQR_TEST_REQUIRE_TOOLS=1`` (`.ci/run`, which installs them all) a missing
program fails those tests instead: CI never skips them quietly.
"""

from __future__ import annotations

import collections
import os
import shutil
from typing import NoReturn

import pytest

REQUIRE = "WORQR_TEST_REQUIRE_TOOLS"

HOW = {
    "prometheus": "apt-get install prometheus",
    "chromium": "apt-get install chromium",
    "chromedriver": "apt-get install chromium-driver (the version of Debian's chromium)",
    "docker-compose": "apt-get install docker-compose",
    "openssl": "apt-get install openssl",
    "redis-server with TLS": "apt-get install redis-server (Debian's is built with TLS)",
}
"""How to get each program (Debian package names; `.ci/run` installs them)."""

ALIASES = {"chromium": ("chromium", "chromium-browser", "google-chrome")}

missing: collections.Counter[str] = collections.Counter()
"""Tests not run this session, by missing program (for the summary line),
counted from the skip reports (`count_skip`), so that under pytest-xdist the
controller, which prints the line, sees its workers' skips too."""

MISSING = ", which is missing"  # "needs <tool>, which is missing (how to get it)"


def find(tool: str) -> str | None:
    """The program's path on PATH, or None."""
    for name in ALIASES.get(tool, (tool,)):
        found = shutil.which(name)
        if found is not None:
            return found
    return None


def require(tool: str, detail: str = "") -> NoReturn:
    """Skip the running test (fail it under ``$WORQR_TEST_REQUIRE_TOOLS``):
    ``tool`` is not available. ``detail`` says what was seen."""
    message = f"needs {tool}{MISSING} ({HOW.get(tool, 'install it')})"
    if detail:
        message += f": {detail}"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{message}; {REQUIRE}=1 forbids skipping it", pytrace=False)
    pytest.skip(message)


def check_marker(item: pytest.Item) -> None:
    """``pytest_runtest_setup``: `require` each program a ``needs`` mark names."""
    for mark in item.iter_markers("needs"):
        for tool in mark.args:
            if find(tool) is None:
                require(tool, "not on PATH")


def count_skip(report: pytest.TestReport) -> None:
    """``pytest_runtest_logreport``: count a test skipped by `require`."""
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    if reason.startswith("needs ") and MISSING in reason:
        missing[reason.removeprefix("needs ").split(MISSING)[0]] += 1


def summary() -> str | None:
    """One line saying which tests were not run for want of which program, and
    how to get each; None when every test had what it needs."""
    if not missing:
        return None
    parts = [
        f"{count} test{'s' if count > 1 else ''} needing {tool} ({HOW.get(tool, 'install it')})"
        for tool, count in sorted(missing.items())
    ]
    return f"not run: {'; '.join(parts)}. As root, .ci/run installs them all."
