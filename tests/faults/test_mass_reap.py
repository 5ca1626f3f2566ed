"""Fault scenario 7: five peers reap, at the same moment, one dead worker that
held 10,000 processes."""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import worqr
from tests.support import ROOT
from tests.support.fault_harness import QUEUE, Figures, Scenario
from tests.support.scripts import is_script_call
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.fault, pytest.mark.slow]

HOLDER = """
import sys, worqr
url, prefix, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
wq = worqr.Worqr(url, prefix=prefix, ttl=1.0, heartbeat=0.2)
wq.start_worker()
held = 0
while held < total:
    held += len(wq.dequeue_many("jobs", min(500, total - held)))
print("holding", held, flush=True)
sys.stdin.read()  # until the test kills us
"""


@pytest.mark.serial
def test_five_peers_reap_one_dead_worker_with_10k_processes(
    scenario: Callable[..., Scenario], tmp_path: Path
) -> None:
    """Each process goes back exactly once, to the front in its original order,
    and no script blocks Redis for long: the reaping is chunked
    (Settings.requeue_chunk), so five reapers interleave chunk by chunk."""
    seed, _, server, prefix, client, checker, _ = scenario("mass-reap")
    total, peers = 10_000, 5
    tasks = [f"t{i}" for i in range(total)]
    with worqr.Worqr(server.url, prefix=prefix) as wq:
        wq.enqueue_many(QUEUE, tasks)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, server.url, prefix, str(total)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().split() == [b"holding", str(total).encode()]
        assert checker.in_process() == total and checker.queued() == 0
        holder.kill()
        holder.wait(10)
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(10)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
    wait_until(checker.dead_workers, timeout=5, message="the holder's lease expires")

    # Record every command from here on, to find the longest script run.
    client.config_set("slowlog-log-slower-than", 0)
    client.config_set("slowlog-max-len", 100_000)
    client.slowlog_reset()
    reapers = [worqr.Worqr(server.url, prefix=prefix) for _ in range(peers)]
    failed: list[int] = []
    barrier = threading.Barrier(peers)

    def reap(wq: worqr.Worqr) -> None:
        barrier.wait()
        failed.append(wq.reap())

    threads = [threading.Thread(target=reap, args=(wq,)) for wq in reapers]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    took = time.monotonic() - began
    log = client.slowlog_get(100_000)
    client.config_set("slowlog-log-slower-than", 10_000)
    for wq in reapers:
        wq.close()

    assert sorted(failed) == [0] * (peers - 1) + [1], failed  # one peer forgot the worker
    assert checker.in_process() == 0 and checker.workers() == set()
    queued = [t.decode() for t in client.lrange(checker.key("tasks"), 0, -1)]
    assert Counter(queued) == Counter(tasks), "a process was requeued twice or lost"
    assert queued[::-1] == tasks, "requeued tasks are not at the front in their original order"
    assert checker.stats().get("recovered") == total

    # Slowlog durations are wall time: on a busy machine the kernel may pause
    # redis-server mid-script, so judge the typical chunk and bound the worst.
    scripts = [e for e in log if is_script_call(e["command"])]
    durations = sorted(e["duration"] / 1000 for e in scripts)  # ms
    chunk = worqr.Settings().requeue_chunk
    assert len(durations) >= total // chunk, "the requeue was not chunked"
    p90, longest = durations[int(len(durations) * 0.9)], durations[-1]
    figures = Figures("mass-reap", seed, f"{peers} concurrent reapers, 1 dead worker", total)
    figures.recover_s = took
    figures.extra.update(
        scripts=len(durations),
        median_script_ms=round(statistics.median(durations), 2),
        p90_script_ms=round(p90, 2),
        longest_script_ms=round(longest, 2),
    )
    figures.report()
    median = statistics.median(durations)
    assert median < 4, f"a typical chunk takes {median:.1f} ms"
    # One unchunked requeue of 10k processes takes ~100 ms.
    assert longest < 50, f"a script ran {longest:.1f} ms"

    # Drain it: every task comes out exactly once.
    with worqr.Worqr(server.url, prefix=prefix) as wq:
        wq.start_worker()
        drained = []
        while batch := wq.dequeue_many(QUEUE, 1000):
            drained += [p.task for p in batch]
            for process in batch:
                assert wq.finish_process(process)
    assert drained == tasks
    stats = checker.stats()
    assert stats["enqueued"] == stats["finished"] == total
    assert checker.orphans() == []
