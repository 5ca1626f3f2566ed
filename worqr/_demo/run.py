"""`worqr demo`: the whole mission in one command, on one machine.

It starts an embedded Redis (unless --url), a supervised mesh of worker processes
running `worqr._demo.handlers`, enqueues jobs and persistent sessions, cancels
queued and running ones by payload, SIGKILLs one worker process mid-run, and
accounts for every task (exit 0 only if each is), and with --keep leaves it all up
(`keep.py`). SIGTERM and SIGHUP stop it as Ctrl-C does; nothing outlives it."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import redis as redis_py
from redis.exceptions import RedisError

from .._cli.base import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CliError
from .._clients.sync_client import Worqr
from .._errors import WorqrError
from .._parent_death import spawn
from .._settings import Settings
from ..embedded import EmbeddedRedis, EmbeddedRedisError, free_port
from . import handlers
from .keep import keep
from .progress import Progress, make_progress, shown
from .summary import Tally, account, metrics_line, metrics_url

T = TypeVar("T")

TTL, HEARTBEAT = 1.5, 0.3  # short leases, so the failover shows within seconds
CONCURRENCY = 8
STEP_TIMEOUT = 60.0  # seconds any one step may take before the demo gives up


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt, which unwinds the
    demo as Ctrl-C does, and are remembered: one that lands in code that
    swallows it (a ``__del__``, where Python ignores exceptions; once in 5 stops
    mid-enqueue, and the demo ran on for 24 s) is raised again by `check`, at
    the demo's next wait or batch."""

    asked = False

    @classmethod
    def on_signal(cls, signum: int, frame: object) -> None:
        cls.asked = True
        raise KeyboardInterrupt

    @classmethod
    def check(cls) -> None:
        if cls.asked:
            raise KeyboardInterrupt


def wait_for(what: str, predicate: Callable[[], T | None], timeout: float = STEP_TIMEOUT) -> T:
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        StopSignals.check()
        if time.monotonic() > deadline:
            raise CliError(f"demo step timed out after {timeout:g} s: {what}")
        time.sleep(0.05)
    return result


class Demo:
    def __init__(self, args: argparse.Namespace, out: Callable[[str], None]) -> None:
        self.args = args
        self.out = out
        self.run_id = uuid.uuid4().hex[:8]
        self.prefix = f"worqr-demo-{self.run_id}"
        self.tally = Tally()
        self.url = ""
        self.client: Worqr
        self.redis: redis_py.Redis
        self.mesh: subprocess.Popen[bytes] | None = None
        self.log_path = Path(tempfile.gettempdir()) / f"worqr-demo-{self.run_id}.log"
        self.metrics_port = free_port()

    # -- setup ---------------------------------------------------------------

    def start_mesh(self) -> None:
        env = dict(os.environ, WORQR_REDIS_URL=self.url, **handlers.env_for(self.run_id))
        command = [
            sys.executable,
            "-m",
            "worqr",
            "worker",
            "worqr._demo.handlers:worker",
            "--processes",
            str(self.args.processes),
            "--concurrency",
            str(CONCURRENCY),
            "--prefix",
            self.prefix,
            "--ttl",
            str(TTL),
            "--heartbeat",
            str(HEARTBEAT),
            "--grace",
            "2",
            "--metrics-port",
            str(self.metrics_port),
            "--log-level",
            self.args.log_level,
        ]
        # SIGTERM when the demo dies, even by SIGKILL.
        self.mesh = spawn(command, self.log_path, env=env)

    def workers(self) -> dict[str, int]:
        """Live workers of the demo mesh: id -> pid."""
        ids = self.client.get_workers()
        alive = self.client.workers_alive(ids)
        found = {}
        for worker, ok in zip(ids, alive, strict=True):
            pid = self.client.get_worker_info(worker).get("pid", "")
            if ok and pid.isdigit():
                found[worker] = int(pid)
        return found

    def ready(self) -> dict[str, int] | None:
        if self.mesh is not None and self.mesh.poll() is not None:
            raise CliError(f"the worker processes exited early; see {self.log_path}")
        found = self.workers()
        return found if len(found) >= self.args.processes else None

    # -- steps ---------------------------------------------------------------

    def enqueue(self, progress: Progress) -> None:
        total = self.args.tasks
        jobs = [handlers.job_name(i, total) for i in range(total)]
        self.tally.jobs = jobs
        count = handlers.SESSIONS_PER_PROCESS * self.args.processes
        self.tally.sessions = [f"session-{i}" for i in range(count)]
        self.client.enqueue_many(handlers.SESSIONS, self.tally.sessions)
        with shown(progress):
            for start in range(0, total, 250):
                batch = jobs[start : start + 250]
                StopSignals.check()
                self.client.enqueue_many(handlers.JOBS, batch)
                progress.advance(len(batch))

    def cancel_queued(self) -> None:
        tail = self.tally.jobs[-max(1, self.args.tasks // 20) :]
        for job in tail:
            if self.client.cancel_tasks(handlers.JOBS, job):
                self.tally.cancelled_queued.add(job)
        self.out(
            f"  cancelled {len(self.tally.cancelled_queued)} queued jobs by payload "
            f"(the last {len(tail)} enqueued; any missing had already run)"
        )

    def cancel_running(self) -> None:
        slow = [job for job in self.tally.jobs if handlers.is_slow(job)]
        wait_for(
            "slow jobs start",
            lambda: all(
                self.redis.sismember(handlers.key(self.run_id, "started"), j) for j in slow
            ),
        )
        for job in slow:
            if self.client.cancel_tasks(handlers.JOBS, job):
                self.tally.cancelled_running.add(job)
        self.out(
            f"  cancelled {len(self.tally.cancelled_running)} running jobs by payload: "
            "their handlers saw the cancellation and stopped"
        )

    def held(self, worker: str) -> tuple[int, int]:
        jobs = self.client.count_worker_processes(handlers.JOBS, worker)
        sessions = self.client.count_worker_processes(handlers.SESSIONS, worker)
        return jobs, sessions

    def kill_one(self) -> None:
        wait_for("a third of the jobs finish", lambda: self._finished() >= self.args.tasks // 3)
        workers = self.workers()
        victim = max(workers, key=lambda w: (self.held(w)[1] > 0, sum(self.held(w))))
        jobs, sessions = self.held(victim)
        pid = workers[victim]
        recovered_before = self._recovered()
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        self.out(
            f"  SIGKILLed worker process {pid} while it held {jobs} jobs and {sessions} sessions"
        )
        wait_for("peers fail the killed worker", lambda: victim not in self.client.get_workers())
        returned = self._recovered() - recovered_before
        self.out(
            f"  its peers failed it {time.monotonic() - killed_at:.1f} s later and returned "
            f"{returned} tasks to the front of their queues"
        )
        fresh = wait_for("the supervisor restarts it", lambda: self._replacement(workers))
        self.out(f"  the supervisor started a replacement: pid {fresh}")

    def _finished(self) -> int:
        return self.client.get_stats(handlers.JOBS).get("finished", 0)

    def _recovered(self) -> int:
        return sum(
            self.client.get_stats(q).get("recovered", 0) for q in (handlers.JOBS, handlers.SESSIONS)
        )

    def _replacement(self, before: dict[str, int]) -> int | None:
        now = self.workers()
        new = [pid for worker, pid in now.items() if worker not in before]
        return new[0] if new and len(now) >= self.args.processes else None

    def drain(self) -> None:
        started = time.monotonic()
        wait_for(
            "the job queue drains",
            lambda: (
                self.client.count_tasks(handlers.JOBS) == 0
                and self.client.count_processes(handlers.JOBS) == 0
            ),
        )
        self.out(f"  all jobs done {time.monotonic() - started:.1f} s later")

    def cancel_sessions(self) -> None:
        sessions = self.tally.sessions
        wait_for(
            "every session runs",
            lambda: self.client.count_processes(handlers.SESSIONS) == len(sessions),
        )
        owners = self.redis.hgetall(handlers.key(self.run_id, "owner"))
        moved = int(self.redis.scard(handlers.key(self.run_id, "moved")) or 0)
        pids = sorted({int(v) for v in owners.values()})
        self.out(
            f"  {len(sessions)} persistent sessions run on pids {', '.join(map(str, pids))}; "
            f"{moved} of them moved to a peer when their owner was killed"
        )
        for session in sessions:
            if self.client.cancel_tasks(handlers.SESSIONS, session):
                self.tally.cancelled_running.add(session)
        wait_for("sessions stop", lambda: self.client.count_processes(handlers.SESSIONS) == 0)
        self.out(f"  cancelled all {len(sessions)} sessions by payload while they ran")

    # -- accounting ----------------------------------------------------------

    def account(self) -> bool:
        return account(self.client, self.redis, self.run_id, self.tally, self.out)

    # -- teardown ------------------------------------------------------------

    def stop_mesh(self) -> bool:
        """SIGTERM the supervisor; True if it and its workers stopped cleanly."""
        mesh, self.mesh = self.mesh, None
        if mesh is None or mesh.poll() is not None:
            return mesh is not None and mesh.returncode == 0
        mesh.send_signal(signal.SIGTERM)
        try:
            code = mesh.wait(STEP_TIMEOUT)
        except subprocess.TimeoutExpired:
            mesh.kill()
            mesh.wait()
            return False
        return code == 0


@contextlib.contextmanager
def _redis_for(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    if args.url:
        yield args.url, "Redis at the given --url (keys under a fresh prefix)"
        return
    try:
        with EmbeddedRedis() as server:
            yield server.url, f"embedded redis-server (pid {server.pid}) at {server.url}"
    except EmbeddedRedisError as error:
        raise CliError(str(error).splitlines()[0]) from None


def run_demo(args: argparse.Namespace) -> int:
    StopSignals.asked = False
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, StopSignals.on_signal) for sig in stops}
    try:
        return _run_demo(args)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run_demo(args: argparse.Namespace) -> int:
    def out(line: str) -> None:
        print(line, flush=True)

    began = time.monotonic()
    with _redis_for(args) as (url, where):
        demo = Demo(args, out)
        demo.url = url
        settings = Settings(prefix=demo.prefix, retry_deadline=3.0)
        try:
            client, raw = Worqr(url, settings=settings), redis_py.Redis.from_url(url)
        except ValueError as error:  # redis-py's verdict on a malformed URL
            raise CliError(f"bad Redis URL: {error}", EXIT_USAGE) from None
        with client, raw:
            demo.client, demo.redis = client, raw
            client.get_queues()  # Redis must answer before any worker process starts
            try:
                return _run(demo, where, began)
            finally:
                demo.stop_mesh()
                with contextlib.suppress(WorqrError, RedisError):  # best effort
                    handlers.cleanup(raw, demo.run_id)
                    if args.url:  # someone else's Redis: leave no demo queues behind
                        for queue in (handlers.JOBS, handlers.SESSIONS, handlers.REPORTS):
                            client.delete_queue(queue)


def _run(demo: Demo, where: str, began: float) -> int:
    out, args = demo.out, demo.args
    out(
        f"worqr demo: {args.tasks} jobs and "
        f"{handlers.SESSIONS_PER_PROCESS * args.processes} persistent sessions "
        f"on {args.processes} worker processes"
    )
    out(f"  redis    {where}")
    demo.start_mesh()
    workers = wait_for("the worker processes register", demo.ready)
    pids = ", ".join(map(str, sorted(workers.values())))
    out(
        f"  mesh     {len(workers)} supervised worker processes (pids {pids}), "
        f"up to {CONCURRENCY} jobs each at a time"
    )
    out(f"           key prefix {demo.prefix!r}")
    url = metrics_url(demo.metrics_port)
    out(f"  metrics  {url} (Prometheus, summed over the worker processes)")
    out("")
    out(f"[1/6] enqueue {args.tasks} jobs ({handlers.SLOW_JOBS} slow, some failing)")
    demo.enqueue(make_progress(args.tasks, "enqueue"))
    out("[2/6] cancel queued jobs")
    demo.cancel_queued()
    out("[3/6] cancel running jobs")
    demo.cancel_running()
    out("[4/6] kill a worker process mid-run")
    demo.kill_one()
    out("[5/6] drain")
    demo.drain()
    out("[6/6] cancel the persistent sessions")
    demo.cancel_sessions()
    balanced = demo.account()
    out(metrics_line(url, demo.client.get_stats(handlers.JOBS).get("finished", 0)))
    if args.keep:
        keep(demo, url)
    clean = demo.stop_mesh()
    workers_left = demo.client.get_workers()
    stopped = clean and not workers_left
    out(
        f"  {'ok  ' if stopped else 'FAIL'} SIGTERM stopped every worker process and each "
        f"deregistered ({len(workers_left)} left registered)"
    )
    out(f"done in {time.monotonic() - began:.1f} s")
    if balanced and stopped:
        demo.log_path.unlink(missing_ok=True)
        return EXIT_OK
    out(f"worker output: {demo.log_path}")
    return EXIT_FAILURE
