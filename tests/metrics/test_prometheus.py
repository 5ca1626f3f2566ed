"""Every panel of the Grafana dashboard rises under the event it shows, in a real
Prometheus that scrapes a real mesh: worker processes behind one multiprocess
endpoint, the standalone exporter, a producer of tasks and jobs, and the events
themselves, each caused on purpose: a SIGKILLed worker holding work of queues
with ``max_recoveries=0`` (dead-lettered, poisoned), a worker paused until its
peers fail it (lease lost, fenced, recovered), a worker that dies between a flow
hop's write and its relay (a late hop, overdue delayed jobs), a rate-limited
burst, a fair-share group at its cap, running work cancelled, dead letters
redriven, a Redis restart (errors, reconnects, the exporter down), a worker
stopped with a task in hand (released), a schedule that skips fires and one no
member fires (stalled).

"Every query returns a series" proves little: the exporter fills every job
event with 0 as soon as a job queue exists, and the workers create their series
at 0. So each target of each panel must show a value above 0 (the exporter's
"reads Redis" stat: 0 during the outage), for the labels its event gives;
`test_every_panel_rises_under_the_event_it_shows` fails if a target of the
dashboard is left without an event, or if its query or the metric breaks.

Grafana cannot run here; Prometheus evaluates exactly the expressions Grafana
would send, with its variables substituted the way Grafana substitutes them.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support import ROOT
from tests.support.mesh import queue_keys
from tests.support.metrics import Prometheus
from tests.support.waiting import wait_until
from worqr import AmbiguousResultError, RedisUnavailableError, Step, Worqr
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis, free_port
from worqr.metrics.serve import MetricsServer, mark_dead, multiprocess_registry, serve

DASHBOARD = ROOT / "grafana" / "dashboards" / "worqr.json"
PROMETHEUS = shutil.which("prometheus")
TASK_QUEUES = ("alpha", "beta")  # beta: max_recoveries=0
JOB_QUEUE = "gamma"  # max_recoveries=0; two schedules; flows
LIMITED = "delta"  # rate-limited: 2 starts a second
ORPHAN = "epsilon"  # a schedule, and no member to fire it
RELAYED = "zeta"  # served by the worker that dies before it relays
QUEUES = (*TASK_QUEUES, JOB_QUEUE, LIMITED, ORPHAN, RELAYED)
RATE_WINDOW = "15s"  # what Grafana's $__rate_interval becomes for a 1 s scrape interval
PRODUCER_PERIOD = 0.05  # seconds between the producer's rounds
TTL = 6.0  # the workers' lease: a Redis restart (about 2 s) is shorter, a pause longer
STALLED_AFTER = 5.0  # the exporter's --stall-after here (a minute by default)
PEER_RELAY_LEASE = 60.0  # the peers relay a hop left behind at most every 30 s

pytestmark = [pytest.mark.prometheus, pytest.mark.slow, pytest.mark.needs("prometheus")]

# One worker process: a worqr Worker running sleepy handlers (tasks, and jobs),
# counted by the metrics package, writing to the shared multiprocess directory.
# Its role: "peer" (the mesh), "doomed" (holds one "doom" item of each of
# alpha, beta and gamma until it is killed; a peer runs a recovered one at
# once), or "relay-crash" (serves zeta and exits where a worker would relay the
# flow hop it just wrote: as if it died between the two).
WORKER = """
import os, sys, threading, time
import redis
import worqr
from worqr.metrics import install_worker_metrics

url, prefix, role, ttl, relay_lease = sys.argv[1:6]
doomed = role == "doomed"
marks = redis.Redis.from_url(url)
worker = worqr.Worker(url, prefix=prefix, concurrency=3 if doomed else 4)
worker.configure(
    ttl=float(ttl),
    heartbeat=float(ttl) / 6,
    grace_period=1.0,
    jobs=worqr.JobSettings(relay_lease=float(relay_lease)),
)
retried = set()

def hold(name, millis, cancelled):
    # "hold": until cancelled (a cancel, a lost lease, a shutdown) or millis pass.
    if name == "doom" and doomed:
        threading.Event().wait()  # until SIGKILL
    elif name == "hold":
        marks.rpush(prefix + ":holding", name + ":" + millis)  # the handler runs: a test waits
        cancelled.wait(int(millis) / 1000)
    return name in ("doom", "hold")

def handle(task: str) -> None:
    name, _, millis = task.partition(":")
    if hold(name, millis, worqr.current_process().cancelled):
        return
    time.sleep(int(millis) / 1000)
    if name.startswith("fail"):
        raise RuntimeError("this task fails")
    if name.startswith("retry") and name not in retried:
        retried.add(name)
        raise worqr.Retry()

def job(payload: str) -> str:
    name, _, millis = payload.partition(":")
    if hold(name, millis, worqr.current_job().cancelled):
        return name
    time.sleep(int(millis or 0) / 1000)  # a chain's second step gets the first's result
    if name.startswith("fail"):
        raise worqr.Fail("this job fails")
    if name.startswith("retry") and worqr.current_job().attempt == 1:
        raise RuntimeError("this attempt fails; the next one succeeds")
    if name.startswith("slow"):
        worqr.current_job().cancelled.wait(5)  # set when it runs past its timeout
    return name

if role == "relay-crash":
    from worqr._core.relay import Relay

    def die_before_relaying(self, queue, written):
        if written:
            os._exit(9)  # the hop is in the outbox; nobody relays it now
        yield from ()

    Relay.relay_written = die_before_relaying
    worker.job("zeta")(job)
else:
    for queue in ("alpha", "beta"):
        worker.handler(queue)(handle)
    worker.job("gamma", retries=1, backoff=0.05)(job)
if role == "peer":
    worker.job("delta")(job)
    worker.cron("gamma", "beat", every=0.5, payload="beat:0")
    # Each job holds a second: most fires find the last one live, and skip.
    worker.cron("gamma", "long", every=0.3, payload="hold:1000", overlap=False)

install_worker_metrics(worker)
print("ready", flush=True)
worker.run()
"""


def substitute(expr: str) -> str:
    """Grafana's variables, as Grafana expands them for these settings."""
    return (
        expr.replace("$queue", "|".join(QUEUES))
        .replace("$__rate_interval", RATE_WINDOW)
        .replace("$__interval", "5s")
        .replace("$__range", "5m")
    )


def dashboard_targets() -> dict[tuple[str, str], str]:
    """(panel title, refId) -> the target's expression, of every panel."""

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    dashboard = json.loads(DASHBOARD.read_text())
    targets = {
        (panel["title"], target["refId"]): target["expr"]
        for panel in panels(dashboard["panels"])
        for target in panel.get("targets", [])
    }
    assert len(targets) >= 50
    return targets


Labels = dict[str, str]
Target = tuple[str, str]  # (panel title, refId)


class Dashboard:
    """The dashboard's targets as Prometheus evaluates them, and the events the
    test has seen each one show."""

    def __init__(self, prometheus: Prometheus) -> None:
        self.prometheus = prometheus
        self.started = time.monotonic()
        self.targets = {key: substitute(expr) for key, expr in dashboard_targets().items()}
        self.shown: dict[Target, list[str]] = {}

    def over_the_test(self, function: str, target: Target) -> list[tuple[Labels, float]]:
        """``function`` (max_over_time, min_over_time) of the target's finite
        values at every second since Prometheus started: each series' labels
        and value."""
        span = math.ceil(time.monotonic() - self.started) + 5
        expr = f"{function}((({self.targets[target]}) < +Inf)[{span}s:1s])"
        return [(s["metric"], float(s["value"][1])) for s in self.prometheus.query(expr)]

    def risen(self, target: Target, *wanted: Labels) -> list[Labels]:
        """Those of ``wanted`` (label subsets; none: any series) for which the
        target has shown a value above 0 so far."""
        peaks = self.over_the_test("max_over_time", target)
        return [
            labels
            for labels in wanted or ({},)
            if any(v > 0 and labels.items() <= m.items() for m, v in peaks)
        ]

    def quiet(self, target: Target, *wanted: Labels) -> None:
        """The target has shown nothing above 0 yet: the event about to be
        caused is what makes it rise."""
        assert not self.risen(target, *wanted), f"{target} rose before its event"

    def rises(self, target: Target, event: str, *wanted: Labels, timeout: float = 30) -> None:
        """Wait until the target has shown a value above 0 for each of
        ``wanted``, and record ``event`` as what drives it."""
        missing = list(wanted or ({},))

        def done() -> bool:
            risen = self.risen(target, *wanted)
            missing[:] = [labels for labels in wanted or ({},) if labels not in risen]
            return not missing

        try:
            wait_until(done, timeout=timeout, interval=0.25, message=f"{target} under {event}")
        except AssertionError as error:
            raise AssertionError(f"{error}: nothing above 0 for {missing}") from None
        self.shown.setdefault(target, []).append(event)

    def drops(self, target: Target, event: str, timeout: float = 30) -> None:
        """Wait until the target showed 0 (a stat that is 1 while all is well)."""

        def lows() -> list[float]:
            return [v for _, v in self.over_the_test("min_over_time", target)]

        assert lows() == [1.0], f"{target} was not 1 before {event}"
        wait_until(lambda: lows() == [0.0], timeout=timeout, interval=0.25, message=str(target))
        self.shown.setdefault(target, []).append(event)


class Mesh:
    """Worker processes sharing one metrics endpoint (as under `worqr worker
    --processes N`), the standalone exporter, and a producer thread, on a
    private Redis (the test restarts it)."""

    def __init__(self, directory: Path, server: EmbeddedRedis, prefix: str) -> None:
        self.server, self.url, self.prefix = server, server.url, prefix
        self.metrics_dir = directory / "metrics"
        self.metrics_dir.mkdir()
        self.env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(self.metrics_dir)}
        self.workers: list[subprocess.Popen[bytes]] = []
        self.endpoint: MetricsServer = serve(
            0, registry=multiprocess_registry(str(self.metrics_dir))
        )
        self.exporter_port = free_port()
        self.exporter = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "worqr.metrics.exporter",
                "--url",
                self.url,
                "--prefix",
                prefix,
                "--port",
                str(self.exporter_port),
                "--stall-after",
                str(STALLED_AFTER),
            ],
            env={k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"},
        )
        self.stop = threading.Event()
        self.producer = threading.Thread(target=self._produce, daemon=True)
        self.produced = self.outages = 0
        self.error: BaseException | None = None

    def spawn(self, role: str = "peer") -> subprocess.Popen[bytes]:
        """Start a worker; `ready` waits for it."""
        lease = 0.5 if role == "relay-crash" else PEER_RELAY_LEASE
        args = [sys.executable, "-c", WORKER, self.url, self.prefix, role, str(TTL), str(lease)]
        process = subprocess.Popen(args, env=self.env, stdout=subprocess.PIPE)
        self.workers.append(process)
        return process

    @staticmethod
    def ready(*processes: subprocess.Popen[bytes]) -> None:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline() == b"ready\n"

    def _produce(self) -> None:
        try:
            with Worqr(self.url, prefix=self.prefix) as client:
                n = 0
                while not self.stop.wait(PRODUCER_PERIOD):
                    n += 1
                    try:
                        self._send(client, n)
                    except (RedisUnavailableError, AmbiguousResultError):
                        self.outages += 1  # Redis restarts: go on, as a producer would
                    self.produced = n
        except BaseException as error:  # the test reads it: a dead producer fails it
            self.error = error
            raise

    @staticmethod
    def _send(client: Worqr, n: int) -> None:
        kind = "fail" if n % 10 == 0 else "retry" if n % 7 == 0 else "task"
        client.enqueue_many(TASK_QUEUES[n % 2], [f"{kind}{n}:{(n * 37) % 40}", f"task{n}b:{n % 5}"])
        if n % 15 == 0:
            client.enqueue(TASK_QUEUES[0], f"doomed{n}:0")
            client.cancel_tasks(TASK_QUEUES[0], f"doomed{n}:0")
        Mesh._submit(client, n)

    @staticmethod
    def _submit(client: Worqr, n: int) -> None:
        """Jobs: some delayed, a retried one, a failed one, one past its timeout,
        a chain, and a delayed one cancelled."""
        payload = f"{'fail' if n % 10 == 0 else 'retry' if n % 7 == 0 else 'job'}{n}:{n % 20}"
        client.submit(JOB_QUEUE, payload, delay=0.3 if n % 3 == 0 else None)
        if n % 20 == 0:
            client.submit(JOB_QUEUE, f"slow{n}:0", timeout=0.05, retries=0)
        if n % 10 == 5:  # a flow: its hop goes through the queue's outbox
            client.submit_chain([Step(JOB_QUEUE, f"chain{n}:0"), Step(JOB_QUEUE)])
        if n % 15 == 0:
            doomed = client.submit(JOB_QUEUE, f"doomed{n}:0", delay=60)
            client.cancel_job(JOB_QUEUE, doomed.id)

    def close(self) -> None:
        self.stop.set()
        if self.producer.is_alive():
            self.producer.join(timeout=15)
        for process in [*self.workers, self.exporter]:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)  # in case a failed test left it frozen
                process.send_signal(signal.SIGTERM)
        for process in [*self.workers, self.exporter]:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        self.endpoint.close()


@pytest.fixture
def mesh(tmp_path: Path, make_redis: Callable[..., EmbeddedRedis], prefix: str) -> Iterator[Mesh]:
    # Its append-only file is written on SIGTERM, so a restart loses nothing.
    made = Mesh(tmp_path, make_redis(appendonly=True), prefix)
    try:
        yield made
    finally:
        made.close()


def worker_of(client: Worqr, process: subprocess.Popen[bytes]) -> str:
    def found() -> str | None:
        for worker in client.get_workers():
            if client.get_worker_info(worker).get("pid") == str(process.pid):
                return worker
        return None

    return wait_until(found, timeout=10, message=f"pid {process.pid} registered")


def test_every_panel_rises_under_the_event_it_shows(tmp_path: Path, mesh: Mesh) -> None:
    assert PROMETHEUS is not None
    raw = redis.Redis.from_url(mesh.url)
    client = Worqr(mesh.url, prefix=mesh.prefix)
    prometheus: Prometheus | None = None
    try:
        client.configure_queue(TASK_QUEUES[1], max_recoveries=0)  # dead-letter at once
        client.configure_queue(JOB_QUEUE, max_recoveries=0)  # poison at once
        client.configure_queue(LIMITED, rate=(2, 1.0))

        # The doomed worker, alone, takes one "doom" item of each queue it serves.
        doomed = mesh.spawn("doomed")
        mesh.ready(doomed)
        doomed_id = worker_of(client, doomed)
        for queue in TASK_QUEUES:
            client.enqueue(queue, "doom:0")
        client.submit(JOB_QUEUE, "doom:0", retries=0)
        held = (*TASK_QUEUES, JOB_QUEUE)
        wait_until(
            lambda: all(client.count_worker_processes(q, doomed_id) == 1 for q in held),
            timeout=15,
            message="the doomed worker holds one item of each queue",
        )
        prometheus = Prometheus(
            PROMETHEUS,
            tmp_path,
            {"worqr-exporter": mesh.exporter_port, "worqr-workers": mesh.endpoint.port},
        )
        paused, stopped, crashing = mesh.spawn(), mesh.spawn(), mesh.spawn("relay-crash")
        mesh.ready(paused, stopped, crashing)
        wait_until(prometheus.ready, timeout=30, interval=0.2, message="prometheus ready")
        wait_until(prometheus.targets_up, timeout=30, interval=0.2, message="targets up")
        board = Dashboard(prometheus)
        run_the_events(board, mesh, client, raw, doomed, paused, stopped, crashing)

        # No worker ever serves epsilon: its schedule is stalled STALLED_AFTER
        # after its first fire time.
        stalled = ("Schedules: fires, skips, stalled", "C")
        board.quiet(stalled)
        client.schedule(ORPHAN, "orphan", every=0.1)
        orphaned = time.monotonic()
        board.rises(
            stalled,
            "a schedule of a queue no member serves, STALLED_AFTER past its fire time",
            {"queue": ORPHAN},
            timeout=orphaned + STALLED_AFTER + 15 - time.monotonic(),
        )
        check_the_figures(prometheus, mesh)

        not_shown = sorted(set(board.targets) - set(board.shown))
        assert not not_shown, f"panel targets no event was shown to drive: {not_shown}"
    finally:
        if prometheus is not None:
            prometheus.close()
        client.close()
        raw.close()


def long_holds(raw: redis.Redis, prefix: str) -> int:
    """How many "hold:30000" handlers have started (the worker app marks each)."""
    return raw.lrange(f"{prefix}:holding", 0, -1).count(b"hold:30000")


def run_the_events(
    board: Dashboard,
    mesh: Mesh,
    client: Worqr,
    raw: redis.Redis,
    doomed: subprocess.Popen[bytes],
    paused: subprocess.Popen[bytes],
    stopped: subprocess.Popen[bytes],
    crashing: subprocess.Popen[bytes],
) -> None:
    """Cause each event, then wait until the targets that show it rise; a
    target only an event can drive is checked quiet (nothing above 0) before."""
    rises, quiet = board.rises, board.quiet
    alpha, beta = TASK_QUEUES
    jobs = {"queue": JOB_QUEUE}
    held = [{"queue": q} for q in (alpha, beta, JOB_QUEUE)]
    in_process, by_queue = ("In process", "A"), "In process by queue"
    # Work in process: the doomed worker's "doom" items, before anything else runs.
    rises(in_process, "the doomed worker's items, held")
    rises((by_queue, "A"), "the doomed worker's items, held (Redis)", *held)
    rises((by_queue, "B"), "the doomed worker's items, held (its gauge)", *held)

    # Traffic: tasks that finish, fail, retry and are cancelled while queued;
    # jobs that finish, fail, retry, time out, wait (delay, backoff), chain;
    # two schedules, one of them skipping fires.
    events, outcomes = "Task events by queue", "Handler outcomes by queue"
    states, retries = "Jobs by state", "Job retries vs failures"
    schedules, churn = "Schedules: fires, skips, stalled", "Worker churn"
    quiet((events, "A"), {"queue": alpha, "event": "cancelled"})
    quiet((retries, "D"))
    mesh.producer.start()
    client.submit(JOB_QUEUE, "later:0", delay=60)  # delayed for the whole test
    client.submit(JOB_QUEUE, "retry-later:0", retries=1, backoff=60)  # retrying, as long
    traffic, alive = "the producer's tasks and jobs", "workers whose lease is alive"
    rises(("Finished / s", "A"), traffic)
    rises(("Dead letters", "A"), "tasks that fail, jobs that fail for good")
    rises(("Workers alive", "A"), alive)
    rises(("Exporter reads Redis", "A"), "the exporter reading Redis")
    for ref, queue in (("A", alpha), ("B", alpha), ("C", JOB_QUEUE)):  # C: submitted
        rises(("Enqueued vs finished by queue", ref), traffic, {"queue": queue})
    for ref in "ABC":
        rises(("Run time percentiles by queue", ref), traffic, {"queue": alpha})
    rises(("Dead letters by queue", "A"), "tasks that fail", {"queue": alpha})
    rises((outcomes, "A"), "handlers that raise", {"queue": alpha})
    rises((outcomes, "B"), "handlers that raise worqr.Retry", {"queue": alpha})
    for ref in "AB":
        rises(("Started vs finished in the workers", ref), traffic, {"queue": alpha})
    rises(
        (events, "A"),
        "tasks that fail, are cancelled while queued, raise worqr.Retry (stopped)",
        *({"queue": alpha, "event": e} for e in ("failed", "cancelled", "stopped")),
    )
    rises(
        (states, "A"),
        "jobs delayed (delay=60 and 0.3 s), running, retrying (backoff=60)",
        *({"state": s} for s in ("delayed", "active", "retrying")),
    )
    rises(
        (states, "B"),
        "jobs finished, failed for good and cancelled (retained)",
        *({"state": s} for s in ("finished", "failed", "cancelled")),
    )
    for ref in "AB":
        rises(("Job start delay", ref), "jobs starting", jobs)
    rises((retries, "A"), "job attempts that fail once, then succeed", jobs)
    rises((retries, "B"), "jobs that raise worqr.Fail or time out", jobs)
    rises((retries, "D"), "jobs past their 0.05 s timeout", jobs)
    rises(("Workers alive", "A"), alive)
    rises(("Workers alive", "B"), "workers registered")
    rises(("Workers per queue", "A"), "workers joining queues", {"queue": alpha})
    rises(("Wake-ups and dequeues by queue", "A"), "wake-ups", {"queue": alpha})
    rises(
        ("Wake-ups and dequeues by queue", "B"),
        "dequeues that found work, and some that found none",
        {"queue": alpha, "result": "tasks"},
        {"queue": alpha, "result": "empty"},
    )
    rises(("Thundering-herd ratio by queue", "A"), "wake-ups whose dequeue found nothing")
    rises((schedules, "A"), "schedules firing every 0.5 s and 0.3 s", jobs)
    rises((schedules, "B"), "an overlap=False schedule whose 1 s job outlasts its 0.3 s", jobs)
    # SIGKILL the doomed worker: a peer fails it; its alpha task is recovered, its
    # beta task dead-lettered and its gamma job poisoned (max_recoveries=0).
    lost_items = ({"queue": alpha, "event": "recovered"}, {"queue": beta, "event": "dead_lettered"})
    quiet((events, "A"), *lost_items)
    quiet((retries, "C"))
    for ref in "CDE":  # peers failed, tasks recovered, tasks poisoned
        quiet((churn, ref))
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=10)
    mark_dead(doomed.pid, str(mesh.metrics_dir))
    killed = "a SIGKILLed worker failed by a peer"
    rises((events, "A"), f"{killed}: its items recovered, dead-lettered", *lost_items)
    rises((retries, "C"), f"{killed}: its job poisoned", jobs)
    rises((churn, "C"), killed)
    rises((churn, "D"), f"{killed}: its task recovered")
    rises((churn, "E"), f"{killed}: its task dead-lettered, its job poisoned")

    # A worker dies between a flow hop's write and its relay: the hop waits in
    # zeta's outbox, late, until a peer's relay turn (every 30 s, mesh-wide)
    # takes it; a delayed job of zeta, the queue only it served, falls due with
    # no member to promote it until its peers fail it. Until then, the chains'
    # hops are relayed at once: none was ever late.
    flow, overdue = "Flow hops waiting (outbox)", ("Overdue delayed jobs", "A")
    assert mesh.produced >= 100  # chains among them
    quiet((flow, "B"))
    quiet((flow, "A"), {"queue": RELAYED})
    quiet(overdue, {"queue": RELAYED})  # (elsewhere a due job may wait for a take)
    relayer = MeshKeys(mesh.prefix).relayer
    wait_until(
        lambda: raw.pttl(relayer) > 8000,
        timeout=PEER_RELAY_LEASE / 2 + 5,
        message="a relay turn just taken: none comes for 8 s",
    )
    chain = client.submit_chain([Step(RELAYED, "link:0"), Step(JOB_QUEUE)])
    assert crashing.wait(timeout=10) == 9
    mark_dead(crashing.pid, str(mesh.metrics_dir))
    client.submit(RELAYED, "late:0", delay=0.2)
    rises((flow, "A"), "a hop its worker died before relaying", {"queue": RELAYED})
    rises((flow, "B"), "that hop, past its relay lease", {"queue": RELAYED})
    rises(overdue, "a delayed job of a queue whose one member died", {"queue": RELAYED})
    assert client.get_job(JOB_QUEUE, f"{chain.id}.1") is None  # not relayed yet

    # Pause a worker holding tasks until its peers fail it, then let it go on: it
    # finds its lease gone, its handlers' acknowledgements are refused (fenced),
    # and it registers again.
    paused_id = worker_of(client, paused)
    quiet((churn, "B"))  # (not fenced: a finish that races a cancel is fenced too)

    def frozen_holding_tasks() -> bool:
        # Frozen, it cannot finish what it holds between the check and the peers.
        paused.send_signal(signal.SIGSTOP)
        if client.count_worker_processes(alpha, paused_id):
            return True
        paused.send_signal(signal.SIGCONT)
        return False

    wait_until(frozen_holding_tasks, timeout=10, interval=0.02)
    wait_until(
        lambda: paused_id not in client.get_workers(),
        timeout=TTL * 4,
        message="peers fail the paused worker",
    )
    paused.send_signal(signal.SIGCONT)
    lost = "a paused worker failed by its peers, then resumed"
    rises((churn, "B"), lost)
    rises((churn, "A"), f"{lost}: it registers again (and every worker's start)")
    rises((outcomes, "D"), f"{lost}: its acknowledgements refused", {"queue": alpha})

    # A burst on the rate-limited queue: ready jobs held back, the backlog grows.
    limited = {"queue": LIMITED}
    quiet(("Rate limited and paused queues", "A"))
    quiet(("Backlog by queue", "A"), limited)
    client.submit_many(LIMITED, [f"burst{i}:0" for i in range(20)])
    burst = "a burst of 20 jobs on a queue limited to 2 starts a second"
    rises(("Rate limited and paused queues", "A"), burst, limited)
    rises(("Backlog", "A"), burst)
    rises(("Backlog by queue", "A"), burst, limited)
    rises((states, "A"), f"{burst} (and traffic)", {"state": "queued"})

    # A tenant's group at its cap: one job holds its only slot, the next waits.
    groups = "Fair-share groups: waiting and limited"
    quiet((groups, "A"), limited)
    quiet((groups, "B"), limited)
    client.configure_group(LIMITED, "tenant", max_active=1)
    client.submit_many(LIMITED, ["hold:8000", "next:0"], group="tenant")
    capped = "a group of two jobs with max_active=1 on the limited queue"
    rises((groups, "A"), capped, limited)
    rises((groups, "B"), f"{capped}: the first runs, the second waits for it", limited)

    # An operator pauses a queue (epsilon: no member, so nothing else changes).
    orphan = {"queue": ORPHAN}
    quiet(("Rate limited and paused queues", "B"), orphan)
    client.pause(ORPHAN)
    rises(("Rate limited and paused queues", "B"), "a queue paused (worqr pause)", orphan)

    # Cancel a running task and a running job: their handlers see it and return.
    # (Not checked quiet before: the producer's cancels may catch a task running.)
    # Each cancelled once its handler runs (its app marks that), not once taken:
    # one cancelled in between never starts, and no outcome shows it (CI, loaded).
    client.enqueue(alpha, "hold:30000")
    wait_until(lambda: long_holds(raw, mesh.prefix) == 1, timeout=10, message="the task runs")
    assert client.cancel_tasks(alpha, "hold:30000") == 1
    held_job = client.submit(JOB_QUEUE, "hold:30000")
    wait_until(lambda: long_holds(raw, mesh.prefix) == 2, timeout=10, message="the job runs")
    assert client.cancel_job(JOB_QUEUE, held_job.id)
    running = "a task and a job cancelled while they run"
    rises((outcomes, "C"), running, {"queue": alpha}, jobs)

    # An operator redrives alpha's dead letters.
    redriven = {"queue": alpha, "event": "redriven"}
    quiet((events, "A"), redriven)
    assert client.requeue_failed(alpha) > 0
    rises((events, "A"), "dead letters redriven (worqr failed alpha --requeue)", redriven)

    # Restart Redis (shorter than a lease): the workers' loops and heartbeats
    # fail, the exporter cannot read, then all reconnect.
    errors = ("Redis errors", "A"), ("Redis errors", "B"), ("Redis errors", "C")
    for target in (*errors, ("Redis errors", "D")):
        quiet(target)
    restart = "a Redis restart"
    mesh.server.stop()
    board.drops(("Exporter reads Redis", "A"), f"{restart}: the exporter cannot read")
    rises(("Redis errors", "A"), f"{restart}: the workers' loops see an outage")
    rises(("Redis errors", "C"), f"{restart}: heartbeats fail")
    rises(("Redis errors", "D"), f"{restart}: the exporter's scrapes fail")
    mesh.server.start()
    rises(("Redis errors", "B"), f"{restart}: the workers' loops reconnect")
    wait_until(lambda: board.prometheus.scalar("min(worqr_collector_up)") == 1, timeout=15)

    # Stop a worker (SIGTERM) while its handlers run past the grace period: the
    # tasks go back to their queue (released).
    released = {"queue": alpha, "event": "released"}
    quiet((events, "A"), released)
    client.enqueue_many(alpha, [f"hold:{3000 + i}" for i in range(8)])  # both peers' slots
    stopped_id = worker_of(client, stopped)
    keys = queue_keys(mesh.prefix, alpha)

    def holding() -> bool:
        pids = raw.zrange(keys.owned(stopped_id), 0, -1)
        tasks = raw.hmget(keys.processes, pids) if pids else []
        return any(task and task.startswith(b"hold:") for task in tasks)

    wait_until(holding, timeout=10, message="the worker to stop runs a held task")
    stopped.send_signal(signal.SIGTERM)
    assert stopped.wait(timeout=15) == 0
    mark_dead(stopped.pid, str(mesh.metrics_dir))
    rises((events, "A"), "a worker stopped (SIGTERM) with tasks in hand: released", released)

    # A peer's relay turn relays the late hop: the chain goes on.
    wait_until(
        lambda: client.get_job(JOB_QUEUE, f"{chain.id}.1") is not None,
        timeout=PEER_RELAY_LEASE / 2 + 5,
        message="a peer relays the late hop",
    )
    assert mesh.error is None, mesh.error


def check_the_figures(prometheus: Prometheus, mesh: Mesh) -> None:
    """The figures, not only their rise: exact counts, times and bounds."""
    scalar = prometheus.scalar
    window = "[1m]"
    jobs = f'{{queue="{JOB_QUEUE}"}}'
    # Failed by their peers: the killed worker, the paused one, the one that crashed.
    assert scalar("sum(worqr_peers_failed_total)") == 3
    p95 = scalar(
        "histogram_quantile(0.95, sum by (le) "
        f'(rate(worqr_task_duration_seconds_bucket{{queue=~"alpha|beta"}}{window})))'
    )
    assert 0.001 <= p95 <= 0.1
    p50 = scalar(
        "histogram_quantile(0.5, sum by (le) "
        f"(rate(worqr_job_start_delay_seconds_bucket{jobs}{window})))"
    )
    assert 0 <= p50 <= 0.5
    # The schedules every worker declares fire once per fire time, not once per
    # worker: the jobs they created are 500 ms apart (the overlap=False one's, a
    # multiple of 300 ms: the fires in between were skipped), and counted.
    with redis.Redis.from_url(mesh.url) as client:
        ids = client.hkeys(f"{{{mesh.prefix}:{JOB_QUEUE}}}:job:data")
    fires = {
        name: sorted(int(i.rpartition(b":")[2]) for i in ids if i.startswith(b"cron:%s:" % name))
        for name in (b"beat", b"long")
    }
    beats = fires[b"beat"]
    assert len(beats) >= 20 and all(b - a == 500 for a, b in itertools.pairwise(beats)), beats
    gaps = [b - a for a, b in itertools.pairwise(fires[b"long"])]
    assert all(gap % 300 == 0 for gap in gaps) and max(gaps) >= 600, gaps  # fires skipped
    fired = f'worqr_queue_events_total{{queue="{JOB_QUEUE}", event="cron_fired"}}'
    assert 0 < scalar(f"sum({fired})") <= len(beats) + len(fires[b"long"])
    assert scalar(f"sum(worqr_schedules{jobs})") == 2
    assert scalar(f'sum(worqr_schedules_stalled{{queue="{ORPHAN}"}})') == 1
    assert scalar(f'sum(worqr_schedules_stalled{{queue!="{ORPHAN}"}})') == 0
    # Due jobs never pile up where a live worker serves the queue: at most the
    # delayed jobs submitted while the workers' loops reconnect after the Redis
    # restart (the producer is back first; a loaded machine stretches it to ~3 s).
    # A lost wake-up would leave every later one due: hundreds over the test.
    delayed_per_second = 1 / (3 * PRODUCER_PERIOD)  # Mesh._submit: every third is delayed
    overdue = f'max_over_time(sum(worqr_jobs_overdue{{queue!="{RELAYED}"}})[2m:1s])'
    assert scalar(overdue) <= math.ceil(3 * delayed_per_second)
    now_overdue = f'sum(worqr_jobs_overdue{{queue!="{RELAYED}"}})'
    wait_until(lambda: scalar(now_overdue) == 0, timeout=10)  # and they are taken
    # The late hop was relayed: the outbox holds none now, the chain went on.
    wait_until(lambda: scalar("sum(worqr_flow_outbox)") == 0, timeout=10)
    assert scalar("max(worqr_flow_outbox_oldest_seconds)") == 0
    # One worker left: the paused one came back; the others died or stopped.
    wait_until(lambda: scalar("worqr_workers_alive") == 1, timeout=15)
    labels = prometheus.get("/api/v1/label/queue/values", **{"match[]": "worqr_queue_tasks"})
    assert set(labels["data"]) == set(QUEUES)  # what the $queue variable offers
