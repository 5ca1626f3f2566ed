"""Settings presets for clients and workers under test.

Most client tests want no timer at all: `QUIET` clients never heartbeat, reap
or poll on their own during a test (the test calls ``heartbeat()`` and
``reap()`` itself, and a worker "dies" when the test deletes its alive key
with `tests.support.mesh.kill`). The worker runtime tests want the timers, but
short: `FAST`.
"""

from __future__ import annotations

from typing import Any

import worqr

QUIET: dict[str, Any] = {"ttl": 60.0, "heartbeat": 20.0, "poll_interval": 60.0}
"""No heartbeat, reaper turn or fallback poll fires during a test."""

FAST: dict[str, Any] = {"ttl": 1.0, "heartbeat": 0.2, "poll_interval": 0.5, "retry_deadline": 2.0}
"""Real timers, short: a lost lease is noticed within about a second."""


def quiet(prefix: str, **changes: Any) -> worqr.Settings:
    """`worqr.Settings` of the mesh ``prefix`` with `QUIET` timers (and ``changes``)."""
    return worqr.Settings(prefix=prefix, **{**QUIET, **changes})
