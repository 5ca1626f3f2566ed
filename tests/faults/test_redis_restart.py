"""Fault scenario 4: Redis killed (`kill -9`, appendonly everysec) and restarted
mid-run, and a clean restart (SIGTERM), while producers enqueue and a mesh works."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

import worqr
from tests.support.fault_harness import QUEUE, Checker, Figures, meshes, new_mesh, read_log, seeded
from tests.support.waiting import wait_until
from worqr.embedded import EmbeddedRedis

pytestmark = [pytest.mark.fault, pytest.mark.slow]

TTL, HEARTBEAT = 2.0, 0.4
TIMING = ("--ttl", str(TTL), "--heartbeat", str(HEARTBEAT), "--concurrency", "4")


class Producer(threading.Thread):
    """Enqueues one task at a time and remembers how each enqueue ended."""

    def __init__(self, url: str, prefix: str, rng_seed: int) -> None:
        super().__init__(name="fault-producer", daemon=True)
        settings = worqr.Settings(prefix=prefix, socket_timeout=2.0, retry_deadline=5.0)
        self.client = worqr.Worqr(url, settings=settings)
        self.acked: dict[str, float] = {}  # task id -> monotonic time of the reply
        self.ambiguous: list[str] = []
        self.refused: list[str] = []
        self.stopping = threading.Event()
        self.count = 0
        self.seed = rng_seed

    def run(self) -> None:
        while not self.stopping.wait(0.005):
            task = f"p{self.count}"
            self.count += 1
            try:
                self.client.enqueue(QUEUE, f"{task}:{5 + self.count % 20}")
            except worqr.AmbiguousResultError:
                self.ambiguous.append(task)
            except worqr.RedisUnavailableError:
                self.refused.append(task)
            else:
                self.acked[task] = time.monotonic()

    def finish(self) -> None:
        self.stopping.set()
        self.join(30)
        self.client.close()


@pytest.mark.parametrize("crash", [True, False], ids=["kill-9", "clean"])
def test_redis_restart_mid_run_loses_nothing(
    crash: bool, make_redis: Callable[..., EmbeddedRedis], tmp_path: Path
) -> None:
    """``crash``: SIGKILL redis-server (AOF, fsync everysec) after a random delay,
    leave it down a moment, start it on the same AOF. Otherwise a clean SIGTERM
    restart. Workers reconnect, scripts reload after NOSCRIPT, every enqueue that
    was acknowledged runs, and nothing refused or in doubt runs twice."""
    name = "redis-kill-9" if crash else "redis-clean-restart"
    seed, rng = seeded(name)
    server = make_redis(appendonly=True, extra_args=["--appendfsync", "everysec"])
    prefix = f"f{uuid.uuid4().hex[:10]}"
    log = tmp_path / "executions.jsonl"
    initial = [f"t{i}" for i in range(600)]
    with meshes(tmp_path, server.url, prefix) as made, worqr.Worqr(server.url, prefix=prefix) as wq:
        mesh = new_mesh(made, tmp_path, server.url, prefix).start(3, *TIMING)
        wait_until(lambda: len(wq.get_workers()) == 3, timeout=30)
        wq.enqueue_many(QUEUE, [f"{t}:{rng.randint(5, 30)}" for t in initial])
        producer = Producer(server.url, prefix, seed)
        producer.start()
        time.sleep(rng.uniform(0.5, 1.5))  # the fault strikes at a random point of the run
        if crash:
            server.kill()
            time.sleep(rng.uniform(0.3, 1.0))  # down: connections refused
            server.start()
        else:
            server.restart()
        fault = time.monotonic()
        time.sleep(0.5)  # keep producing a little after the fault
        producer.finish()

        client = redis.Redis.from_url(server.url)
        checker = Checker(client, prefix)
        restored = wq.get_stats(QUEUE).get("enqueued", 0)
        drained = checker.wait_quiescent(timeout=30)
        recover = drained - fault
        assert mesh.running()
        assert "Traceback" not in mesh.text()
        assert mesh.stop() == 0
        assert wq.get_workers() == []

    records = read_log(log)
    ran = {e["t"] for e in records if e["e"] == "start"}
    # Refused enqueues never reached Redis; ambiguous ones ran at most once.
    assert not ran & set(producer.refused), "a refused enqueue was applied"
    maybe = [t for t in producer.ambiguous if t in ran]
    tasks = initial + list(producer.acked) + maybe
    assert restored >= len(initial), "the restart lost acknowledged enqueues"
    figures = Figures(
        name,
        seed,
        "SIGKILL redis-server + restart on its AOF" if crash else "SIGTERM + restart",
        len(tasks),
        recover_s=recover,
    )
    figures.extra.update(
        acked=len(producer.acked),
        ambiguous=len(producer.ambiguous),
        refused=len(producer.refused),
    )
    checker.verify(figures, records, tasks)
    figures.report()
    assert checker.orphans() == []
    client.close()
