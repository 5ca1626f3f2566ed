"""Fault scenario 13, the soak: steady traffic with periodic SIGKILLs for a long
while (10 minutes by default); worker RSS and the Redis key count must stay flat.

One worker process is never killed, so its RSS covers the whole run. Opt-in,
outside CI and not collected by pytest: ``make soak``, or
``python tests/faults/soak.py --minutes 10``. Exits 0 when every invariant held.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `tests` imports

import redis

import worqr
from tests.support.fault_harness import QUEUE, Checker, CliMesh, Figures, read_log, worker_ids
from worqr.embedded import EmbeddedRedis

TTL, HEARTBEAT = 2.0, 0.4


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Producer(threading.Thread):
    def __init__(self, url: str, prefix: str, rate: int, rng: random.Random) -> None:
        super().__init__(name="soak-producer", daemon=True)
        self.client = worqr.Worqr(url, prefix=prefix)
        self.rate, self.rng = rate, rng
        self.tasks: list[str] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        tick = 0.1
        while not self.stopping.wait(tick):
            batch = [f"s{len(self.tasks) + i}" for i in range(max(1, int(self.rate * tick)))]
            self.client.enqueue_many(QUEUE, [f"{t}:{self.rng.randint(1, 20)}" for t in batch])
            self.tasks += batch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--rate", type=int, default=200, help="tasks enqueued per second")
    parser.add_argument("--kill-every", type=float, default=15.0, help="seconds between kills")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    print(f"[soak] seed={seed} minutes={args.minutes:g} processes={args.processes} "
          f"rate={args.rate}/s kill every {args.kill_every:g}s", flush=True)  # fmt: skip
    prefix = f"soak{uuid.uuid4().hex[:8]}"
    with (
        tempfile.TemporaryDirectory(prefix="worqr-soak-") as tmp,
        EmbeddedRedis(appendonly=True) as server,
    ):
        log, out = Path(tmp) / "executions.jsonl", Path(tmp) / "mesh.out"
        mesh = CliMesh(server.url, prefix, log, out, FAULT_MAX_RECOVERIES="1000")
        admin = redis.Redis.from_url(server.url)
        checker = Checker(admin, prefix)
        producer = Producer(server.url, prefix, args.rate, rng)
        killed: set[int] = set()
        samples: list[tuple[float, int, int, int]] = []  # (t, a worker's RSS, redis RSS, keys)
        try:
            options = ("--ttl", str(TTL), "--heartbeat", str(HEARTBEAT), "--concurrency", "4")
            mesh.start(args.processes, *options)
            deadline = time.monotonic() + 60
            while len(mesh.workers()) < args.processes:
                if time.monotonic() > deadline:
                    up = len(mesh.workers())
                    raise SystemExit(f"only {up} of {args.processes} workers came up")
                time.sleep(0.1)
            # One worker is never killed: its RSS over the whole run shows a leak
            # (the others are replaced too often to grow).
            sentinel = min(mesh.workers())
            producer.start()
            began = time.monotonic()
            end = began + args.minutes * 60
            next_kill = began + args.kill_every
            next_sample = began
            while time.monotonic() < end:
                now = time.monotonic()
                if now >= next_sample:
                    samples.append((
                        now - began,
                        rss_kib(sentinel),
                        rss_kib(server.pid or 0),
                        int(admin.dbsize()),
                    ))  # fmt: skip
                    t, worker_rss, redis_rss, keys = samples[-1]
                    print(f"[soak] t={t:6.0f}s worker RSS {worker_rss / 1024:6.1f} MiB  "
                          f"redis RSS {redis_rss / 1024:6.1f} MiB  keys {keys:4d}  "
                          f"queued {checker.queued():5d}  enqueued {len(producer.tasks):7d}",
                          flush=True)  # fmt: skip
                    next_sample = now + 10
                if now >= next_kill:
                    registered = {e["os"] for e in read_log(log) if e["e"] == "registered"}
                    victims = sorted(p for p in mesh.workers() if p in registered and p != sentinel)
                    if victims:
                        victim = rng.choice(victims)
                        os.kill(victim, signal.SIGKILL)
                        killed.add(victim)
                    next_kill = now + args.kill_every
                time.sleep(0.1)
            producer.stopping.set()
            producer.join(30)
            gone = worker_ids(read_log(log), killed)
            checker.wait_quiescent(timeout=120, gone=gone)
            assert mesh.stop(60) == 0, "the mesh did not stop cleanly"
            figures = Figures("soak", seed, f"{len(killed)} x SIGKILL", len(producer.tasks))
            checker.verify(figures, read_log(log), producer.tasks, killed_pids=killed)
            assert checker.orphans() == [], checker.orphans()
            figures.report()
            return 0 if flat(samples) else 1
        finally:
            producer.stopping.set()
            mesh.close()
            producer.client.close()
            admin.close()


def flat(samples: list[tuple[float, int, int, int]]) -> bool:
    """The last minute's figures against those of the second minute (after warm-up)."""
    early = [s for s in samples if 60 <= s[0] < 120] or samples[: max(1, len(samples) // 4)]
    late = samples[-6:]
    ok = True
    for index, name, slack in ((1, "worker RSS", 20 * 1024), (2, "redis RSS", 20 * 1024)):
        before = statistics.median(s[index] for s in early)
        after = statistics.median(s[index] for s in late)
        grew = after > before * 1.25 + slack
        print(f"[soak] {name}: {before / 1024:.1f} -> {after / 1024:.1f} MiB "
              f"{'GREW' if grew else 'flat'}")  # fmt: skip
        ok &= not grew
    keys_before = max(s[3] for s in early)
    keys_after = statistics.median(s[3] for s in late)
    grew = keys_after > keys_before + 10
    print(f"[soak] keys: {keys_before} -> {keys_after:.0f} {'GREW' if grew else 'flat'}")
    return ok and not grew


if __name__ == "__main__":
    sys.exit(main())
