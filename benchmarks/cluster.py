"""worqr on a Redis Cluster with 1 master and with 3: throughput on several busy
queues. ``python -m benchmarks.cluster [--quick]``

Each run starts its own cluster (`worqr.embedded_cluster.EmbeddedCluster`), then:

- enqueue: producer processes push every task (one ``enqueue`` call, one
  script, per task; the queues in turn);
- drain: worker processes take them (``dequeue_many`` of 50, the queues in
  turn, each started at a different queue) and finish each one (one script call
  per task), until every queue is empty.

Several queues spread over the masters (each queue is one slot), so with 3
masters the Redis work is split three ways; the figures also show each node's
share of Redis CPU. On a 2-core machine the Python clients, not Redis, are the
bottleneck, so the gain is bounded by the cores: read the figures as such.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import redis
from redis.crc import key_slot

import worqr
from worqr._keys import MeshKeys
from worqr.embedded import EmbeddedRedis
from worqr.embedded_cluster import SLOTS, EmbeddedCluster, node_client

DEQUEUE_BATCH = 50


def _produce(
    url: str, cluster: bool, prefix: str, queues: list[str], tasks: int, seed: int, sync: Any
) -> None:
    go, out = sync
    with worqr.Worqr(url, cluster=cluster, prefix=prefix) as client:
        client.get_queues()  # connected (and the slot map read) before the clock starts
        sent, turn = 0, seed
        go.wait()
        started = time.monotonic()  # one clock for every process of this machine
        while sent < tasks:
            client.enqueue(queues[turn % len(queues)], f"{seed}-{sent}")
            sent, turn = sent + 1, turn + 1
        out.put((sent, started, time.monotonic()))


def _drain(url: str, cluster: bool, prefix: str, queues: list[str], seed: int, sync: Any) -> None:
    go, out = sync
    settings = worqr.Settings(prefix=prefix, poll_interval=60.0)
    with worqr.Worqr(url, cluster=cluster, settings=settings) as client:
        client.start_worker()
        for queue in queues:
            client.start_work(queue)
        done, empty_in_a_row, turn = 0, 0, seed
        go.wait()
        started = time.monotonic()
        while empty_in_a_row < len(queues):
            taken = client.dequeue_many(queues[turn % len(queues)], DEQUEUE_BATCH)
            turn += 1
            empty_in_a_row = 0 if taken else empty_in_a_row + 1
            for process in taken:
                client.finish_process(process)
            done += len(taken)
        out.put((done, started, time.monotonic()))


def _redis_cpu(ports: list[int]) -> list[float]:
    """Each node's CPU seconds so far (user + system)."""
    seconds = []
    for port in ports:
        with node_client(port) as client:
            cpu = client.info("cpu")
        seconds.append(float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]))
    return seconds


def _phase(
    target: Callable[..., None], jobs: list[tuple[Any, ...]], ports: list[int]
) -> dict[str, Any]:
    """Run ``target(*job, sync)`` in one process per job, all released at once;
    the phase lasts from the first start to the last end."""
    context = multiprocessing.get_context("spawn")
    go, out = context.Barrier(len(jobs) + 1), context.Queue()
    children = [context.Process(target=target, args=(*job, (go, out))) for job in jobs]
    for child in children:
        child.start()
    go.wait(timeout=120)  # every child connected
    cpu_before = _redis_cpu(ports)
    results = [out.get(timeout=600) for _ in children]
    cpu = [after - before for before, after in zip(cpu_before, _redis_cpu(ports), strict=True)]
    for child in children:
        child.join(60)
        if child.exitcode != 0:
            raise RuntimeError(f"a benchmark process failed (exit {child.exitcode})")
    elapsed = max(end for _, _, end in results) - min(start for _, start, _ in results)
    count = sum(n for n, _, _ in results)
    return {
        "tasks": count,
        "seconds": round(elapsed, 2),
        "per_s": round(count / elapsed),
        "redis_cpu_s": [round(c, 2) for c in cpu],
    }


def spread_queues(prefix: str, queues: int, masters: int) -> list[str]:
    """``queues`` names whose slots spread evenly over the masters of an
    `EmbeddedCluster` of ``masters`` (it splits the slots in equal ranges)."""
    per = SLOTS // masters
    wanted = [queues // masters + (i < queues % masters) for i in range(masters)]
    names: list[str] = []
    for i in range(100 * queues):
        name = f"q{i}"
        owner = min(key_slot(MeshKeys(prefix).queue(name).tasks.encode()) // per, masters - 1)
        if wanted[owner]:
            wanted[owner] -= 1
            names.append(name)
        if len(names) == queues:
            return names
    raise RuntimeError("could not spread the queues")  # pragma: no cover


def run(
    masters: int, tasks: int, names: list[str], prefix: str, producers: int, workers: int
) -> dict[str, Any]:
    """One run; ``masters=0``: a standalone Redis and standalone clients."""
    keys = [MeshKeys(prefix).queue(name).tasks for name in names]
    clustered = masters > 0
    server = EmbeddedCluster(masters) if clustered else EmbeddedRedis()
    with server:
        url = server.url
        ports = server.ports if isinstance(server, EmbeddedCluster) else [server.port]
        share = tasks // producers
        jobs = [(url, clustered, prefix, names, share, i) for i in range(producers)]
        enqueue = _phase(_produce, jobs, ports)
        jobs = [(url, clustered, prefix, names, i) for i in range(workers)]
        drain = _phase(_drain, jobs, ports)
        check = redis.RedisCluster.from_url(url) if clustered else redis.Redis.from_url(url)
        with check:
            left = sum(int(check.llen(key)) for key in keys)
        owners = Counter(
            server.owner(key_slot(key.encode())) if isinstance(server, EmbeddedCluster) else 0
            for key in keys
        )
        spread = sorted(owners.values(), reverse=True)
    if drain["tasks"] != enqueue["tasks"] or left:
        raise RuntimeError(f"lost tasks: {enqueue['tasks']} in, {drain['tasks']} out, {left} left")
    return {
        "masters": masters,
        "queues_per_master": spread,
        "enqueue": enqueue,
        "drain": drain,
    }


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3,000 tasks (a smoke run)")
    parser.add_argument("--tasks", type=int, default=30_000)
    parser.add_argument(
        "--masters",
        default="0,1,3",
        help="comma-separated runs: masters of each cluster, 0 for a standalone Redis",
    )
    parser.add_argument("--queues", type=int, default=6)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; medians shown")
    args = parser.parse_args(argv)
    tasks = 3_000 if args.quick else args.tasks
    if min(tasks, args.queues, args.producers, args.workers, args.repeat) < 1:
        parser.error("--tasks, --queues, --producers, --workers and --repeat must be positive")
    try:
        runs = [int(n) for n in args.masters.split(",")]
    except ValueError:
        parser.error(f"--masters takes numbers like 0,1,3, not {args.masters!r}")
    if any(n < 0 for n in runs):
        parser.error("--masters must not be negative")
    prefix = f"bench{os.getpid()}"
    names = spread_queues(prefix, args.queues, max(runs))
    print(
        f"{tasks} tasks on {args.queues} queues; {args.producers} producer and "
        f"{args.workers} worker processes; {os.cpu_count()} CPU cores; "
        f"medians of {args.repeat} runs (runs alternate between the setups)"
    )
    results: dict[int, list[dict[str, Any]]] = {masters: [] for masters in runs}
    for _ in range(args.repeat):
        for masters in runs:
            results[masters].append(
                run(masters, tasks, names, prefix, args.producers, args.workers)
            )
    header = "Redis CPU seconds per node, drain"
    print(f"{'Redis':>10} {'enqueue/s':>10} {'drain/s':>9}  {header}")
    for masters, done in results.items():
        enqueue = round(_median([r["enqueue"]["per_s"] for r in done]))
        drain = round(_median([r["drain"]["per_s"] for r in done]))
        cpu = [
            round(_median(list(c)), 2)
            for c in zip(*(r["drain"]["redis_cpu_s"] for r in done), strict=True)
        ]
        name = (f"{masters} master" + ("s" if masters > 1 else "")) if masters else "standalone"
        spread = done[0]["queues_per_master"]
        print(f"{name:>10} {enqueue:>10} {drain:>9}  {cpu}  (queues per master: {spread})")


if __name__ == "__main__":
    main()
