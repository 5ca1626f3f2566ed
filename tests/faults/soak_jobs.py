"""The job soak: a steady stream of jobs (some delayed, some retried once, some
failing for good) through `worqr worker --processes N` with periodic SIGKILLs;
worker RSS, Redis memory, the job records kept and the key count must stay flat,
and every job must end exactly once (finished or failed, none lost).

Jobs are kept 5 s after they end (tests/support/apps/job_soak_app.py), so the
records held are bounded by the rate times that. One worker process is never
killed, so its RSS covers the whole run. Opt-in, outside CI and not collected
by pytest: ``make soak-jobs``, or ``python tests/faults/soak_jobs.py --minutes 10``.
Exits 0 when every invariant held.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `tests` imports

import redis

import worqr
from tests.faults.soak import rss_kib
from tests.support import APPS
from tests.support.cli import cli_env, start_cli
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis

QUEUE = "soak"
LIVE = ("delayed", "queued", "active", "retrying")


class Submitter(threading.Thread):
    """Submits ``rate`` jobs a second: 5 % retried once, 2 % failing for good,
    10 % delayed by up to 2 s."""

    def __init__(self, url: str, prefix: str, rate: int, rng: random.Random) -> None:
        super().__init__(name="soak-submitter", daemon=True)
        self.client = worqr.Worqr(url, prefix=prefix)
        self.rate, self.rng = rate, rng
        self.submitted = self.planned_failures = 0
        self.stopping = threading.Event()

    def payload(self) -> str:
        roll = self.rng.random()
        fail = "2" if roll < 0.02 else "1" if roll < 0.07 else "0"
        self.planned_failures += fail == "2"
        self.submitted += 1
        return f"{self.submitted}:{self.rng.randint(1, 20)}:{fail}"

    def run(self) -> None:
        tick = 0.1
        while not self.stopping.wait(tick):
            count = max(1, int(self.rate * tick))
            delayed = [self.payload() for _ in range(count // 10)]
            if delayed:
                self.client.submit_many(QUEUE, delayed, delay=self.rng.uniform(0.1, 2.0))
            self.client.submit_many(QUEUE, [self.payload() for _ in range(count - len(delayed))])


def worker_pids(client: worqr.Worqr) -> list[int]:
    ids = client.get_workers()
    alive = client.workers_alive(ids)
    infos = [client.get_worker_info(w) for w, up in zip(ids, alive, strict=True) if up]
    return sorted(int(i["pid"]) for i in infos if i.get("pid", "").isdigit())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--rate", type=int, default=300, help="jobs submitted per second")
    parser.add_argument("--kill-every", type=float, default=15.0, help="seconds between kills")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    print(f"[soak-jobs] seed={seed} minutes={args.minutes:g} processes={args.processes} "
          f"rate={args.rate}/s kill every {args.kill_every:g}s", flush=True)  # fmt: skip
    prefix = f"soak{uuid.uuid4().hex[:8]}"
    with (
        tempfile.TemporaryDirectory(prefix="worqr-soak-jobs-") as tmp,
        EmbeddedRedis(appendonly=True) as server,
        worqr.Worqr(server.url, prefix=prefix) as client,
    ):
        client.configure_queue(QUEUE, max_recoveries=-1)  # kills are not poison pills
        submitter = Submitter(server.url, prefix, args.rate, rng)
        admin = redis.Redis.from_url(server.url)
        records_key = MeshKeys(prefix).queue(QUEUE).jobs
        env = cli_env(PYTHONPATH=str(APPS))
        command = ["worker", "job_soak_app:worker", "--url", server.url, "--prefix", prefix]
        command += ["--processes", str(args.processes), "--ttl", "2", "--heartbeat", "0.4"]
        with open(Path(tmp) / "mesh.log", "wb") as log:
            mesh = start_cli(*command, "--max-restarts", "100000", env=env, stdout=log, stderr=log)
        killed: list[int] = []
        samples: list[tuple[float, int, int, int, int]] = []  # t, worker RSS, redis, jobs, keys
        try:
            deadline = time.monotonic() + 60
            while len(worker_pids(client)) < args.processes:
                if time.monotonic() > deadline:
                    up = len(worker_pids(client))
                    raise SystemExit(f"only {up} of {args.processes} workers came up")
                time.sleep(0.1)
            sentinel = min(worker_pids(client))  # never killed: its RSS shows a leak
            submitter.start()
            began = time.monotonic()
            end, next_kill, next_sample = began + args.minutes * 60, began + args.kill_every, began
            while time.monotonic() < end:
                now = time.monotonic()
                if now >= next_sample:
                    memory = int(admin.info("memory")["used_memory"])
                    records = int(admin.hlen(records_key)) // 2  # two fields each (lib/jobs)
                    samples.append(
                        (now - began, rss_kib(sentinel), memory, records, int(admin.dbsize()))
                    )
                    counts = client.count_jobs(QUEUE)
                    print(f"[soak-jobs] t={now - began:6.0f}s worker RSS "
                          f"{samples[-1][1] / 1024:6.1f} MiB  redis {memory / 2**20:6.1f} MiB  "
                          f"records {records:6d}  keys {samples[-1][4]:4d}  "
                          f"live {sum(counts[s] for s in LIVE):5d}  submitted "
                          f"{submitter.submitted:8d}", flush=True)  # fmt: skip
                    next_sample = now + 10
                if now >= next_kill:
                    victims = [p for p in worker_pids(client) if p != sentinel and p not in killed]
                    if victims:
                        victim = rng.choice(victims)
                        os.kill(victim, signal.SIGKILL)
                        killed.append(victim)
                    next_kill = now + args.kill_every
                time.sleep(0.1)
            submitter.stopping.set()
            submitter.join(30)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                counts = client.count_jobs(QUEUE)
                if not any(counts[s] for s in LIVE):
                    break
                time.sleep(0.2)
            return verify(client, submitter, killed, samples, seed)
        finally:
            submitter.stopping.set()
            mesh.terminate()
            try:
                mesh.wait(60)
            except subprocess.TimeoutExpired:
                mesh.kill()
            submitter.client.close()
            admin.close()


def verify(
    client: worqr.Worqr,
    submitter: Submitter,
    killed: list[int],
    samples: list[tuple[float, int, int, int, int]],
    seed: int,
) -> int:
    counts = client.count_jobs(QUEUE)
    stats = client.get_stats(QUEUE)
    ended = stats.get("finished", 0) + stats.get("failed", 0)
    print(f"[soak-jobs] {len(killed)} x SIGKILL; submitted {submitter.submitted}, "
          f"finished {stats.get('finished', 0)}, failed {stats.get('failed', 0)} "
          f"(planned {submitter.planned_failures}), retried {stats.get('retried', 0)}, "
          f"recovered {stats.get('recovered', 0)}, purged {stats.get('purged', 0)}; "
          f"left {counts}", flush=True)  # fmt: skip
    ok = True
    if any(counts[s] for s in LIVE):
        print("[soak-jobs] FAIL: jobs still live after the drain", flush=True)
        ok = False
    if stats.get("submitted", 0) != submitter.submitted or ended != submitter.submitted:
        print("[soak-jobs] FAIL: a job was lost or ended twice", flush=True)
        ok = False
    if stats.get("failed", 0) != submitter.planned_failures:
        print("[soak-jobs] FAIL: failures differ from the planned ones", flush=True)
        ok = False
    ok &= flat(samples)
    print(f"[soak-jobs] seed={seed} {'OK' if ok else 'FAILED'}", flush=True)
    return 0 if ok else 1


def flat(samples: list[tuple[float, int, int, int, int]]) -> bool:
    """The last minute's figures against those of the second minute (after warm-up)."""
    early = [s for s in samples if 60 <= s[0] < 120] or samples[: max(1, len(samples) // 4)]
    late = samples[-6:]
    ok = True
    for index, name, unit, slack in (
        (1, "worker RSS", 1024, 20 * 1024),
        (2, "redis memory", 2**20, 20 * 2**20),
        (3, "job records", 1, 0),
    ):
        before = statistics.median(s[index] for s in early)
        after = statistics.median(s[index] for s in late)
        grew = after > before * 1.25 + slack
        print(f"[soak-jobs] {name}: {before / unit:.1f} -> {after / unit:.1f} "
              f"{'GREW' if grew else 'flat'}")  # fmt: skip
        ok &= not grew
    keys_before = max(s[4] for s in early)
    keys_after = statistics.median(s[4] for s in late)
    grew = keys_after > keys_before + 10
    print(f"[soak-jobs] keys: {keys_before} -> {keys_after:.0f} {'GREW' if grew else 'flat'}")
    return ok and not grew


if __name__ == "__main__":
    sys.exit(main())
