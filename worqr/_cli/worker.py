"""`worqr worker MODULE:ATTR`: load a `Worker`, apply the command line's
overrides, and run it in this process or in N supervised child processes."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from .._clients.sentinel import check_url
from .._errors import WorqrError
from .._runtime.burst import DEFAULT_WAIT, refuse_persistent
from .._runtime.settings import WorkerSettings
from .._runtime.worker import Worker
from .._settings import with_overrides
from .base import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError
from .health import SupervisorProbes, as_child, health_changes
from .restart_policy import RestartPolicy
from .supervised import ready_fd, report_ready, watch_parent
from .supervisor import Supervisor

logger = logging.getLogger("worqr.cli")

URL_ENV = "WORQR_REDIS_URL"


def _import(module_name: str) -> Any:
    cwd = os.getcwd()
    if cwd not in sys.path:  # `worqr worker app:worker` finds app.py in the current directory
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            raise CliError(f"no module named {module_name!r}", EXIT_USAGE) from None
        logger.debug("importing %r failed", module_name, exc_info=True)
        raise CliError(f"importing {module_name!r} failed: {error}", EXIT_USAGE) from None
    except Exception as error:  # the module itself raised: its author's bug, reported briefly
        logger.debug("importing %r failed", module_name, exc_info=True)
        raise CliError(
            f"importing {module_name!r} failed: {type(error).__name__}: {error} "
            "(--log-level DEBUG shows the traceback)",
            EXIT_USAGE,
        ) from None


def load_worker(target: str) -> Worker:
    """The `Worker` named by ``MODULE:ATTR`` (ATTR may be dotted, and may name a
    function that returns the Worker when called with no arguments)."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise CliError(f"expected MODULE:ATTR (e.g. app:worker), got {target!r}", EXIT_USAGE)
    found: Any = _import(module_name)
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise CliError(f"{module_name!r} has no attribute {attr!r}", EXIT_USAGE) from None
    if not isinstance(found, Worker) and callable(found):
        try:
            found = found()
        except Exception as error:
            raise CliError(
                f"calling {target} failed: {type(error).__name__}: {error}", EXIT_USAGE
            ) from None
    if not isinstance(found, Worker):
        raise CliError(f"{target} is a {type(found).__name__}, not a worqr.Worker", EXIT_USAGE)
    if not found.queues:
        raise CliError(f"{target} has no handlers: add one with @worker.handler(queue)", EXIT_USAGE)
    return found


# Worker settings the command line can override: option -> settings field.
OVERRIDES = {
    "--prefix": "prefix",
    "--concurrency": "concurrency",
    "--ttl": "ttl",
    "--heartbeat": "heartbeat",
    "--poll-interval": "poll_interval",
    "--socket-timeout": "socket_timeout",
    "--max-blocked": "max_blocked",
    "--grace": "grace_period",
    "--isolated": "isolated",
    "--max-jobs-per-child": "max_jobs_per_child",
    "--max-memory-per-child": "max_memory_per_child",
    "--no-history": "history",
}


def _option_value(args: argparse.Namespace, option: str) -> Any:
    return getattr(args, option.removeprefix("--").replace("-", "_"))


def configure(worker: Worker, args: argparse.Namespace, url: str | None) -> None:
    """Command-line options override the Worker's own settings."""
    changes: dict[str, Any] = {
        field: value
        for option, field in OVERRIDES.items()
        if (value := _option_value(args, option)) is not None
    }
    client = worker.settings.client
    ttl = args.ttl if args.ttl is not None else client.ttl
    heartbeat = args.heartbeat if args.heartbeat is not None else client.heartbeat
    if (args.ttl is not None or args.heartbeat is not None) and heartbeat >= ttl:
        said_ttl = f"--ttl {ttl:g}" if args.ttl is not None else f"the Worker's ttl ({ttl:g})"
        said_heartbeat = (
            f"--heartbeat {heartbeat:g}"
            if args.heartbeat is not None
            else f"the Worker's heartbeat ({heartbeat:g})"
        )
        raise CliError(
            f"{said_heartbeat} must be shorter than {said_ttl}, or every worker "
            "would expire between its own heartbeats",
            EXIT_USAGE,
        )
    if args.processes == 1 and (args.max_restarts is not None or args.restart_window is not None):
        option = "--max-restarts" if args.max_restarts is not None else "--restart-window"
        raise CliError(
            f"{option} needs --processes > 1 (one process runs without a supervisor)",
            EXIT_USAGE,
        )
    if args.burst_wait is not None and not args.burst:
        raise CliError("--burst-wait needs --burst", EXIT_USAGE)
    if args.burst:
        try:
            refuse_persistent(worker.persistent_queues)
        except ValueError as error:
            raise CliError(str(error), EXIT_USAGE) from None
    changes.update(health_changes(args, worker.settings))
    if args.cluster:
        changes["cluster"] = True
    if url is not None:
        try:
            check_url(url)  # parses only; connects to nothing
        except ValueError as error:
            raise CliError(f"bad Redis URL: {error}", EXIT_USAGE) from None
        changes["url"] = url
    try:
        worker.configure(**changes)
    except (TypeError, ValueError) as error:
        raise CliError(str(error), EXIT_USAGE) from None


def run_worker(args: argparse.Namespace) -> int:
    worker = load_worker(args.target)
    url = os.environ.get(URL_ENV) if args.url_from_env else args.url
    configure(worker, args, url)
    if args.processes > 1:
        return _supervise(args, worker.settings)
    return _run_here(worker, args)


def _run_here(worker: Worker, args: argparse.Namespace) -> int:
    server = None
    if args.metrics_child:
        from ..metrics import install_worker_metrics

        install_worker_metrics(worker)  # the supervisor serves every child's files
    elif args.metrics_port is not None:
        from ..metrics import install_worker_metrics

        server = _serve_metrics(args)
        install_worker_metrics(worker)
    if args.supervised:
        as_child(worker, args)
        watch_parent(worker.stop)
        fd = ready_fd()

        def ready() -> None:  # the supervisor counts deaths before this as start-up failures
            if worker.wait_started():
                report_ready(fd)

        threading.Thread(target=ready, name="worqr-ready", daemon=True).start()
    # A closed terminal (SIGHUP) stops the worker as SIGTERM does: tasks go back.
    signal.signal(signal.SIGHUP, lambda signum, frame: worker.stop())
    try:
        worker.run(burst=args.burst, burst_wait=_burst_wait(args))
    except WorqrError as error:
        raise CliError(str(error)) from None
    finally:
        if server is not None:
            server.close()
    return EXIT_OK


def _burst_wait(args: argparse.Namespace) -> float:
    return DEFAULT_WAIT if args.burst_wait is None else float(args.burst_wait)


def _serve_metrics(args: argparse.Namespace) -> Any:
    from ..metrics import serve

    try:
        server = serve(args.metrics_port, args.metrics_host)
    except OSError as error:
        raise CliError(
            f"cannot serve metrics on {args.metrics_host}:{args.metrics_port}: {error.strerror}",
            EXIT_FAILURE,
        ) from None
    logger.info("metrics on http://%s:%d/metrics", args.metrics_host, server.port)
    return server


def child_command(args: argparse.Namespace) -> Callable[[int], list[str]]:
    """The argv of supervised child ``index``: this command, one process, same options.
    The URL travels in the environment, not in argv (`ps` would show a password)."""
    base = [sys.executable, "-m", "worqr", "worker", args.target, "--processes", "1"]
    base += ["--supervised", "--log-level", args.log_level]
    for option in OVERRIDES:
        value = _option_value(args, option)
        if isinstance(value, bool):  # a flag (--isolated, --no-history): given, or None
            base.append(option)
        elif value is not None:
            base += [option, str(value)]
    if args.url is not None or args.url_from_env:
        base.append("--url-from-env")
    if args.cluster:
        base.append("--cluster")
    if args.metrics_port is not None:
        base.append("--metrics-child")
    if args.burst:  # each child bursts on its own; the supervisor ends when all did
        base += ["--burst", "--burst-wait", str(_burst_wait(args))]

    def command(index: int) -> list[str]:
        return [*base, "--process-index", str(index)]

    return command


def _supervise(args: argparse.Namespace, settings: WorkerSettings) -> int:
    env = dict(os.environ)
    if args.url is not None:
        env[URL_ENV] = args.url
    on_exit: Callable[[int], object] | None = None
    server = directory = probes = None
    if args.metrics_port is not None:
        from ..metrics import mark_dead, prepare_multiprocess_dir

        directory = prepare_multiprocess_dir()
        env["PROMETHEUS_MULTIPROC_DIR"] = directory
        server = _serve_metrics(args)
        on_exit = lambda pid: mark_dead(pid, directory)  # noqa: E731
    try:
        probes = SupervisorProbes(settings, env)  # the children report, it answers
        policy = with_overrides(
            RestartPolicy(),
            max_start_failures=args.max_restarts,
            failure_window=args.restart_window,
        )
        command = probes.command(child_command(args))
        supervisor = Supervisor(
            command, args.processes, env=env, policy=policy, on_exit=on_exit, burst=args.burst
        )
        probes.watch(supervisor)
        code = supervisor.run()
        if supervisor.reason is not None:
            raise CliError(supervisor.reason, code)
        return code
    finally:
        if probes is not None:
            probes.close()
        if server is not None:
            server.close()
        if directory is not None:
            from ..metrics.serve import remove_multiprocess_dir

            remove_multiprocess_dir(directory)
