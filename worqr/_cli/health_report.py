"""How a supervised child tells the supervisor how it is, for the health probes
of `worqr worker --processes N --health-port PORT`.

Each child writes its own checks (`worqr._runtime.progress`) to a small file,
``$WORQR_HEALTH_DIR/<index>.json``, every quarter of a second (sooner with a
short ``--livez-after``), replaced atomically: its pid, when it wrote it
(``time.monotonic()``: the host's clock, which the supervisor shares) and the
two answers. A child that stops writing (SIGSTOP, a freeze outside Python, a
crash) is found by the file's age; one that writes says itself what is wrong.
A file asks nothing of the supervisor's loop: it reads the files when probed
(no thread, no pipe to drain), and a child restarted in the same slot replaces
its predecessor's file (the pid tells an old report from a new one). The
supervisor makes the directory and removes it when it stops.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import NamedTuple

from .._runtime.probes import Checks

logger = logging.getLogger("worqr.supervisor")

HEALTH_ENV = "WORQR_HEALTH_DIR"
"""The environment variable that names the directory children report in."""

REPORT_EVERY = 0.25
"""Seconds between a child's reports (at most: a quarter of ``livez_after``)."""


class Report(NamedTuple):
    pid: int
    at: float  # time.monotonic() when written
    live: str | None
    ready: str | None


def report_path(directory: str, index: int) -> Path:
    return Path(directory) / f"{index}.json"


def read_report(directory: str, index: int) -> Report | None:
    """The last report of slot ``index``, or None when there is none (yet)."""
    try:
        data = json.loads(report_path(directory, index).read_text())
        return Report(int(data["pid"]), float(data["at"]), data["live"], data["ready"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class HealthReporter:
    """In a supervised child: writes ``checks``' answers for slot ``index`` to
    ``directory`` from a daemon thread, until the process exits."""

    def __init__(self, checks: Checks, directory: str, index: int, livez_after: float) -> None:
        self._checks = checks
        self._path = report_path(directory, index)
        self._every = min(REPORT_EVERY, livez_after / 4)
        self._thread = threading.Thread(target=self._run, name="worqr-health", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def write(self) -> None:
        """One report, replacing the last one at once (never half written)."""
        report = Report(os.getpid(), time.monotonic(), self._checks.live(), self._checks.ready())
        scratch = self._path.with_suffix(".tmp")
        scratch.write_text(json.dumps(report._asdict()))
        os.replace(scratch, self._path)

    def _run(self) -> None:
        while True:
            try:
                self.write()
            except OSError as error:  # the supervisor removed the directory: it is leaving
                logger.debug("cannot write the health report: %s", error)
            except Exception:
                logger.exception("the health report failed")
            time.sleep(self._every)


def start_reporting(checks: Checks, index: int, livez_after: float) -> HealthReporter | None:
    """In a supervised child: start reporting when the supervisor asked for it
    (``$WORQR_HEALTH_DIR``, taken out of the environment)."""
    directory = os.environ.pop(HEALTH_ENV, None)
    if directory is None:
        return None
    reporter = HealthReporter(checks, directory, index, livez_after)
    with contextlib.suppress(OSError):
        reporter.write()  # at once: the supervisor counts a child's silence from its start
    reporter.start()
    return reporter
