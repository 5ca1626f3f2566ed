"""The fault suite's harness: real `worqr worker` processes, their execution log,
and the checker of the invariants I1-I5 (issue 5).

- `CliMesh` runs ``worqr worker fault_app:worker`` (under the supervisor when
  ``--processes`` > 1), remembers every pid it ever saw and kills them by pid.
- `read_log` parses the JSON lines `fault_app` appends per execution.
- `Checker.verify` proves, at quiescence: I1 no loss, I2 conservation (and no
  orphan keys after shutdown with `Checker.orphans`), I3 one accepted finish per
  task, I4 every duplicate run explained by a lost lease, and reports figures.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import redis

from tests.support import APPS, ROOT
from tests.support.processes import children, pid_alive
from tests.support.waiting import wait_until

if TYPE_CHECKING:
    from worqr.embedded import EmbeddedRedis

QUEUE = "jobs"


def seeded(name: str) -> tuple[int, random.Random]:
    """The scenario's seed ($FAULT_SEED, else a fresh one, printed) and its generator."""
    seed = int(os.environ.get("FAULT_SEED") or random.SystemRandom().randrange(2**32))
    print(f"[fault] {name}: seed={seed} (rerun with FAULT_SEED={seed})")
    return seed, random.Random(seed)


def read_log(path: Path) -> list[dict[str, Any]]:
    """The execution log's records. A line being appended right now may be read
    half-written (appends are atomic for writers, not for readers): read again."""
    for _ in range(100):
        if not path.exists():
            return []
        text = path.read_text(errors="replace")
        lines = text.split("\n")
        if lines[-1]:
            lines = lines[:-1]  # an unterminated last line is still being written
        try:
            return [json.loads(line) for line in lines if line.strip()]
        except json.JSONDecodeError:
            time.sleep(0.01)
    raise AssertionError(f"{path} holds a line that is not JSON")


def worker_ids(records: list[dict[str, Any]], pids: Iterable[int]) -> set[str]:
    """Every worker id the given OS processes registered under."""
    wanted = set(pids)
    return {e["w"] for e in records if e["e"] == "registered" and e["os"] in wanted}


class CliMesh:
    """One ``worqr worker fault_app:worker`` command and everything it started."""

    def __init__(self, url: str, prefix: str, log: Path, output: Path, **env: str) -> None:
        self.url, self.prefix, self.log, self.output = url, prefix, log, output
        self.env = {**os.environ, "PYTHONPATH": str(APPS), "PYTHONUNBUFFERED": "1"}
        self.env.pop("WORQR_REDIS_URL", None)
        self.env.update(FAULT_LOG=str(log), **env)
        self.process: subprocess.Popen[bytes] | None = None
        self.processes = 0
        self.seen: set[int] = set()

    def redis_options(self) -> list[str]:
        """How the command finds Redis (a subclass may name sentinels instead)."""
        return ["--url", self.url]

    def start(self, processes: int, *options: str) -> CliMesh:
        command = [sys.executable, "-m", "worqr", "worker", "fault_app:worker"]
        command += [*self.redis_options(), "--prefix", self.prefix, "--processes", str(processes)]
        command += ["--log-level", "WARNING", *options]
        self.processes = processes
        with open(self.output, "ab") as out:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=self.env, cwd=ROOT
            )
        self.seen.add(self.process.pid)
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def workers(self) -> list[int]:
        """The worker processes running now: the children of the supervisor, or
        the command itself when it runs one process."""
        if self.processes == 1:
            return [self.pid] if self.running() else []
        found = children(self.pid)
        self.seen.update(found)
        return found

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def text(self) -> str:
        return self.output.read_text(errors="replace") if self.output.exists() else ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (graceful: handlers get their grace period, tasks go back)."""
        assert self.process is not None
        self.workers()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def close(self) -> None:
        """Kill every process this mesh ever had that is still alive, by pid."""
        if self.process is not None:
            self.workers()
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(10)
        for pid in sorted(self.seen):
            if pid_alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)  # a stopped process is still killed
                    os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def meshes(tmp: Path, url: str, prefix: str, **env: str) -> Iterator[list[CliMesh]]:
    """A list to add `CliMesh` objects to; every one is closed afterwards."""
    made: list[CliMesh] = []
    try:
        yield made
    finally:
        for mesh in made:
            mesh.close()
        for index, mesh in enumerate(made):
            text = mesh.text()
            if "Traceback" in text:
                print(f"--- output of mesh {index} ---\n{text[-4000:]}")


def new_mesh(made: list[CliMesh], tmp: Path, url: str, prefix: str, **env: str) -> CliMesh:
    mesh = CliMesh(url, prefix, tmp / "executions.jsonl", tmp / f"mesh-{len(made)}.out", **env)
    made.append(mesh)
    return mesh


class Scenario(NamedTuple):
    """What a fault scenario starts from (fixture ``scenario`` of
    tests/faults/conftest.py), in the order tests unpack it."""

    seed: int
    rng: random.Random
    server: EmbeddedRedis
    """A private server: the scenario may kill, stall or restart it."""
    prefix: str
    client: redis.Redis
    """A raw client of the server, closed after the test."""
    checker: Checker
    log: Path
    """Where `fault_app` appends its execution records."""


@dataclass
class Figures:
    scenario: str
    seed: int
    faults: str
    tasks: int
    lost: int = 0
    duplicates: int = 0
    fenced: int = 0
    lease_losses: int = 0
    recover_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def report(self) -> None:
        recover = "n/a" if self.recover_s is None else f"{self.recover_s:.2f}s"
        extra = "".join(f" {k}={v}" for k, v in self.extra.items())
        print(
            f"[fault] {self.scenario}: seed={self.seed} faults={self.faults!r} "
            f"tasks={self.tasks} lost={self.lost} duplicates={self.duplicates} "
            f"fenced={self.fenced} lease_losses={self.lease_losses} recover={recover}{extra}"
        )
        target = os.environ.get("FAULT_REPORT")
        if target:
            with open(target, "a") as out:
                out.write(json.dumps(self.__dict__) + "\n")


class Checker:
    """Reads the mesh's state in Redis and the execution log, and checks I1-I5."""

    def __init__(self, client: redis.Redis, prefix: str, queue: str = QUEUE) -> None:
        self.redis, self.prefix, self.queue = client, prefix, queue
        self.tag = "{" + prefix + ":" + queue + "}"
        self.mesh_tag = "{" + prefix + "}"

    def key(self, name: str) -> str:
        return f"{self.tag}:{name}"

    def stats(self) -> dict[str, int]:
        raw = self.redis.hgetall(self.key("stats"))
        return {k.decode(): int(v) for k, v in raw.items()}

    def queued(self) -> int:
        return int(self.redis.llen(self.key("tasks")))

    def in_process(self) -> int:
        return int(self.redis.hlen(self.key("processes")))

    def dead_workers(self) -> list[str]:
        workers = [w.decode() for w in self.redis.smembers(f"{self.mesh_tag}:workers")]
        alive = [self.redis.exists(f"{self.mesh_tag}:alive:{w}") for w in workers]
        return [w for w, ok in zip(workers, alive, strict=True) if not ok]

    def misplaced(self) -> list[bytes]:
        """Tasks in two places at once (queued and in process, or twice in
        either), read in one transaction: always empty when tasks are unique."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrange(self.key("tasks"), 0, -1)
            pipe.hvals(self.key("processes"))
            queued, held = pipe.execute()
        counts = Counter([*queued, *held])
        return sorted(task for task, n in counts.items() if n > 1)

    def workers(self) -> set[str]:
        return {w.decode() for w in self.redis.smembers(f"{self.mesh_tag}:workers")}

    def quiescent(self, gone: Iterable[str] = ()) -> bool:
        """Nothing queued, nothing in process, no dead worker left to reap, and
        none of the ``gone`` worker ids (killed ones) still registered."""
        return (
            self.queued() == 0
            and self.in_process() == 0
            and not self.dead_workers()
            and not self.workers() & set(gone)
        )

    def wait_quiescent(self, timeout: float, gone: Iterable[str] = ()) -> float:
        """Wait for quiescence; returns when it was reached (monotonic)."""
        ids = set(gone)
        wait_until(
            lambda: self.quiescent(ids), timeout=timeout, interval=0.02, message="quiescence"
        )
        return time.monotonic()

    def orphans(self) -> list[str]:
        """Keys under the prefix that should not outlive a clean shutdown."""
        allowed = {
            f"{self.mesh_tag}:queues",
            f"{self.mesh_tag}:reaper",  # a lock that expires within one heartbeat
            f"{self.mesh_tag}:upkeep",  # expires within 2 s (job queues only)
            f"{self.mesh_tag}:upkeep:cursor",  # expires a minute after the last upkeep pass
            self.key("stats"),
            self.key("seq"),
            self.key("config"),
            self.key("failed"),
        }
        found: list[str] = []
        for pattern in (f"{self.mesh_tag}*", "{" + self.prefix + ":*"):
            found += [k.decode() for k in self.redis.scan_iter(match=pattern, count=1000)]
        return sorted(set(found) - allowed)

    def verify(
        self,
        figures: Figures,
        records: list[dict[str, Any]],
        enqueued: Iterable[str],
        cancelled: Iterable[str] = (),
        killed_pids: Iterable[int] = (),
        explained: Iterable[str] = (),
    ) -> Figures:
        """Check I1-I4 at quiescence and fill ``figures``.

        ``enqueued``: task ids enqueued once each; ``cancelled``: those whose cancel
        returned (they may have run before, never after); ``killed_pids``: worker
        processes killed (their runs may repeat); ``explained``: worker ids whose
        lease was taken by a fault the test caused (e.g. a Redis stall).
        """
        tasks, gone = list(enqueued), set(cancelled)
        assert len(set(tasks)) == len(tasks), "the test enqueued a task twice"
        starts: dict[str, list[dict[str, Any]]] = {}
        done: Counter[str] = Counter()
        for entry in records:
            if entry["e"] == "start":
                starts.setdefault(entry["t"], []).append(entry)
            elif entry["e"] == "done":
                done[entry["t"]] += 1
        stats = self.stats()
        failed = [f.decode(errors="replace") for f in self.redis.lrange(self.key("failed"), 0, -1)]
        finished_ids = set(done)

        # I1: every enqueued, uncancelled task finished at least once.
        lost = sorted(t for t in tasks if t not in gone and t not in finished_ids)
        figures.lost = len(lost)
        assert not lost, f"I1: {len(lost)} tasks never finished, e.g. {lost[:5]} ({figures.seed=})"
        assert not failed, f"I1: dead-lettered {failed[:5]}"

        # I2: conservation at quiescence, in Redis's own counters.
        queued, held = self.queued(), self.in_process()
        outflow = stats.get("finished", 0) + stats.get("cancelled", 0) + len(failed)
        assert stats.get("enqueued", 0) == len(tasks), f"I2: {stats=} vs {len(tasks)} enqueued"
        assert stats.get("enqueued", 0) == outflow + queued + held, (
            f"I2: {stats=} {queued=} {held=}"
        )

        # I3: one accepted finish per task (an accepted finish deletes its process,
        # so a late or repeated finish of the same process is rejected).
        uncancelled = [t for t in tasks if t not in gone]
        finished = stats.get("finished", 0)
        assert finished <= len(tasks), f"I3: {finished} accepted finishes for {len(tasks)} tasks"
        # (A cancel that found the task ended it unfinished, and nothing finishes it later.)
        assert finished == len(uncancelled), f"I3: {finished=} != {len(uncancelled)} tasks"
        pids = Counter(e["p"] for runs in starts.values() for e in runs)
        assert not [p for p, n in pids.items() if n > 1], "I3: a process id ran twice"

        # I4: a task runs twice only if a worker holding it lost its lease.
        killed, excused = set(killed_pids), set(explained)
        lease_lost = {e["w"] for e in records if e["e"] == "lease_lost"} | excused
        # Processes that fenced themselves (no heartbeat landed for most of the TTL).
        fenced_os = {e["os"] for e in records if e["e"] == "stale"}
        killed |= fenced_os
        duplicates = 0
        for task, runs in starts.items():
            if task in gone:
                continue
            duplicates += len(runs) - 1
            for run in runs[:-1]:
                assert run["os"] in killed or run["w"] in lease_lost, (
                    f"I4: task {task} ran again after run {run} whose worker neither died "
                    f"nor lost its lease ({figures.seed=})"
                )
        figures.duplicates = duplicates
        figures.fenced = sum(1 for e in records if e["e"] == "fenced")
        figures.lease_losses = len({e["w"] for e in records if e["e"] == "lease_lost"})
        if fenced_os:
            figures.extra["self_fenced_processes"] = len(fenced_os)
        return figures

    def verify_cancelled(
        self, records: list[dict[str, Any]], cancelled_at: dict[str, float]
    ) -> None:
        """A cancelled task never starts after its cancel returned (monotonic times
        are comparable: every process runs on this machine)."""
        for entry in records:
            if entry["e"] == "start" and entry["t"] in cancelled_at:
                assert entry["m"] < cancelled_at[entry["t"]], f"cancelled task ran again: {entry}"
