"""`worqr worker --health-port PORT`: the options, their checks, and the probes
of a supervisor, which answers for every child.

One process serves its own probes (`WorkerSettings.health_port`: the worker
starts them when it runs). With ``--processes N`` the supervisor serves the
port: each child reports its own answers (`health_report`), and the supervisor
answers ``/livez`` 503 naming each child that says it is stuck, has not
reported for ``--livez-after`` seconds (stopped, frozen) or is not running, and
``/readyz`` 200 when every child says it is ready.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import shutil
import tempfile
import time
from collections.abc import Callable, MutableMapping
from typing import Any

from .._runtime.probes import ProbeServer
from .._runtime.settings import WorkerSettings
from .._runtime.worker import Worker
from .base import EXIT_FAILURE, EXIT_USAGE, CliError, port_number, positive_float
from .health_report import HEALTH_ENV, read_report, start_reporting
from .supervisor import Supervisor

logger = logging.getLogger("worqr.cli")


def add_health_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("health probes")
    group.add_argument(
        "--health-port",
        type=port_number,
        metavar="PORT",
        help="serve /livez and /readyz on http://HOST:PORT (plain text; 503 says why); "
        "with --processes > 1 the supervisor answers for every process",
    )
    group.add_argument(
        "--health-host",
        metavar="HOST",
        help="address for --health-port (default: 127.0.0.1, loopback only)",
    )
    group.add_argument(
        "--livez-after",
        type=positive_float,
        metavar="SECONDS",
        help="/livez answers 503 once the event loop or a take loop has made no progress "
        "for this long; shorter than --max-blocked (default: 5)",
    )
    # Hidden: a supervised child reports to its supervisor instead of serving.
    group.add_argument("--health-child", action="store_true", help=argparse.SUPPRESS)


def health_changes(args: argparse.Namespace, settings: WorkerSettings) -> dict[str, Any]:
    """The Worker settings the health options change (a usage error raises
    `CliError`). The Worker's own settings count when an option is not given."""
    port = args.health_port if args.health_port is not None else settings.health_port
    if port is None and not args.health_child:
        extra = "--health-host" if args.health_host is not None else "--livez-after"
        if args.health_host is not None or args.livez_after is not None:
            raise CliError(f"{extra} needs --health-port", EXIT_USAGE)
        return {}
    after = args.livez_after if args.livez_after is not None else settings.livez_after
    most = args.max_blocked if args.max_blocked is not None else settings.max_blocked
    if after >= most:
        said_after = (
            f"--livez-after {after:g}"
            if args.livez_after is not None
            else f"the Worker's livez_after ({after:g}; --livez-after sets it)"
        )
        said_most = (
            f"--max-blocked {most:g}"
            if args.max_blocked is not None
            else f"the Worker's max_blocked ({most:g})"
        )
        raise CliError(
            f"{said_after} must be shorter than {said_most}: past it peers fail the worker anyway",
            EXIT_USAGE,
        )
    given = {
        "health_port": args.health_port,
        "health_host": args.health_host,
        "livez_after": args.livez_after,
    }
    return {name: value for name, value in given.items() if value is not None}


def as_child(worker: Worker, args: argparse.Namespace) -> None:
    """In a supervised child: never serve the port (the supervisor does), and
    report to the supervisor when it serves."""
    if worker.settings.health_port is not None:
        worker.settings = dataclasses.replace(worker.settings, health_port=None)
    if args.health_child:
        after = worker.settings.livez_after
        start_reporting(worker.health_checks(after), args.process_index, after)


class SupervisorChecks:
    """The probes' answers for every child of ``supervisor`` (set once it
    exists), read from their reports in ``directory``."""

    def __init__(self, directory: str, livez_after: float) -> None:
        self.directory = directory
        self.livez_after = livez_after
        self.supervisor: Supervisor | None = None

    def live(self) -> str | None:
        supervisor = self.supervisor
        if supervisor is None:
            return None
        now = time.monotonic()
        stopping = supervisor.stopping
        said = [
            self._live(index, pid, started, now, stopping)
            for index, pid, started in supervisor.children()
        ]
        return "; ".join(reason for reason in said if reason) or None

    def ready(self) -> str | None:
        supervisor = self.supervisor
        if supervisor is None:
            return "starting"
        if supervisor.stopping:
            return "shutting down"
        said = [self._ready(index, pid) for index, pid, _ in supervisor.children()]
        return "; ".join(reason for reason in said if reason) or None

    def _live(
        self, index: int, pid: int | None, started: float, now: float, stopping: bool
    ) -> str | None:
        if pid is None:
            return None if stopping else f"worker process {index} is not running"
        report = read_report(self.directory, index)
        mine = report is not None and report.pid == pid
        last = report.at if report is not None and mine else started
        if now - last > self.livez_after:
            return f"worker process {index} (pid {pid}) has not reported for {now - last:.1f} s"
        if report is not None and mine and report.live is not None:
            return f"worker process {index} (pid {pid}): {report.live}"
        return None

    def _ready(self, index: int, pid: int | None) -> str | None:
        if pid is None:
            return f"worker process {index} is not running"
        report = read_report(self.directory, index)
        if report is None or report.pid != pid:
            return f"worker process {index} (pid {pid}) is starting"
        return (
            None if report.ready is None else f"worker process {index} (pid {pid}): {report.ready}"
        )


class SupervisorProbes:
    """The supervisor's probes, or nothing when the Worker serves none: its
    children report to a fresh directory, named in ``env``."""

    def __init__(self, settings: WorkerSettings, env: MutableMapping[str, str]) -> None:
        self._checks: SupervisorChecks | None = None
        self._server: ProbeServer | None = None
        port, host = settings.health_port, settings.health_host
        if port is None:
            return
        directory = tempfile.mkdtemp(prefix="worqr-health-")
        self._checks = SupervisorChecks(directory, settings.livez_after)
        try:
            self._server = ProbeServer(self._checks, port, host)
        except OSError as error:
            shutil.rmtree(directory, ignore_errors=True)
            raise CliError(
                f"cannot serve health probes on {host}:{port}: {error.strerror or error}",
                EXIT_FAILURE,
            ) from None
        env[HEALTH_ENV] = directory
        logger.info("health probes on http://%s:%d/livez and /readyz", host, self._server.port)

    def command(self, command: Callable[[int], list[str]]) -> Callable[[int], list[str]]:
        """``command`` with what makes a child report (when the probes are served)."""
        checks = self._checks
        if checks is None:
            return command
        extra = ["--health-child", "--livez-after", repr(checks.livez_after)]
        return lambda index: [*command(index), *extra]

    def watch(self, supervisor: Supervisor) -> None:
        if self._checks is not None:
            self._checks.supervisor = supervisor

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._checks is not None:
            shutil.rmtree(self._checks.directory, ignore_errors=True)
