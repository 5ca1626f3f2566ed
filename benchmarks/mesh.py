"""Workloads that are not one run per system: what this Redis can do at all
(the ceiling) and how worqr's costs grow with queue depth and mesh size."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import redis

import worqr
from worqr._keys import MeshKeys
from worqr.embedded import find_redis_server

from .harness import Probe, median

Metrics = dict[str, Any]

PUBLISHES = ("publish", "spublish")
_RATE = re.compile(r"^(.+?): ([\d.]+) requests per second", re.MULTILINE)


def _redis_benchmark() -> str:
    found = shutil.which("redis-benchmark")
    sibling = Path(find_redis_server()).with_name("redis-benchmark")
    if found is None and sibling.exists():
        found = str(sibling)
    if found is None:
        raise RuntimeError("redis-benchmark not found next to redis-server or on PATH")
    return found


def _benchmark(probe: Probe, args: list[str], timeout: float) -> dict[str, float]:
    kwargs = probe.client.connection_pool.connection_kwargs
    command = [_redis_benchmark(), "-h", str(kwargs["host"]), "-p", str(kwargs["port"]), "-q"]
    output = subprocess.run(
        command + args, capture_output=True, text=True, timeout=timeout, check=True
    ).stdout
    text = output.replace("\r", "\n")
    rates: dict[str, float] = {}
    for name, rate in _RATE.findall(text):
        rates[name.strip().split()[0].lower()] = float(rate)  # the last report wins
    return rates


def _loop_rate(action: Any, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        action()
    return count / (time.perf_counter() - start)


def ceiling(probe: Probe, quick: bool) -> Metrics:
    """redis-benchmark (one client, 50 clients, pipelined) and redis-py round trips."""
    n = 5000 if quick else 100_000
    probe.reset()
    result: Metrics = {}
    tests = ["-t", "ping,lpush,rpop,set"]
    for label, extra in (
        ("c1", ["-c", "1"]),
        ("c50", ["-c", "50"]),
        ("c1_p16", ["-c", "1", "-P", "16"]),
    ):
        for name, rate in _benchmark(probe, ["-n", str(n), *extra, *tests], 120).items():
            result[f"rb_{label}_{name}"] = rate
    eval_rates = _benchmark(probe, ["-n", str(n // 2), "-c", "1", "eval", "return 1", "0"], 120)
    result["rb_c1_eval_noop"] = next(iter(eval_rates.values()), float("nan"))
    probe.reset()
    client = redis.Redis.from_url(probe.url)
    try:
        count = n // 5
        result["py_lpush"] = _loop_rate(lambda: client.lpush("ceiling", "x" * 20), count)
        result["py_rpop"] = _loop_rate(lambda: client.rpop("ceiling"), count)
        noop = client.register_script("return 1")
        result["py_evalsha_noop"] = _loop_rate(lambda: noop(), count)
        pipe = client.pipeline(transaction=False)
        client.lpush("ceiling", *(["x" * 20] * count))
        start = time.perf_counter()
        for _ in range(count // 100):
            for _ in range(100):
                pipe.rpop("ceiling")
            pipe.execute()
        result["py_pipelined_rpop"] = count / (time.perf_counter() - start)
        for name, action in (("ping", client.ping), ("evalsha_noop", noop)):
            before = probe.snapshot()
            _loop_rate(action, count)
            after = probe.snapshot()
            result[f"redis_cpu_us_per_{name}"] = (after.cpu - before.cpu) / count * 1e6
    finally:
        client.close()
    return result


def _op_costs(probe: Probe, client: worqr.Worqr, queue: str, count: int) -> Metrics:
    """Client µs (median) and server µs per call of enqueue, dequeue and finish."""
    result: Metrics = {}
    taken: list[worqr.Process] = []
    ops = {
        "enqueue": lambda i: client.enqueue(queue, f"{i:020d}"),
        "dequeue": lambda i: taken.append(client.dequeue_many(queue, 1)[0]),
        "finish": lambda i: client.finish_process(taken[i]),
    }
    for name, op in ops.items():
        probe.client.config_resetstat()
        times = []
        for i in range(count):
            start = time.perf_counter()
            op(i)
            times.append(time.perf_counter() - start)
        stats = probe.client.info("commandstats")
        scripts = [stats.get(f"cmdstat_{kind}", {}) for kind in ("evalsha", "fcall")]
        calls = max(1, sum(int(each.get("calls", 0)) for each in scripts))
        result[f"{name}_client_us"] = median(times) * 1e6
        result[f"{name}_server_us"] = sum(int(each.get("usec", 0)) for each in scripts) / calls
    return result


def _fill(client: worqr.Worqr, queue: str, depth: int) -> None:
    chunk = 100_000
    for start in range(0, depth, chunk):
        size = min(chunk, depth - start)
        client.enqueue_many(queue, [f"{start + i:020d}" for i in range(size)])


def _heartbeat_load(probe: Probe, members: int, window: float) -> Metrics:
    """Redis CPU of ``members`` real worqr clients heartbeating (and one of them
    reaping each interval), all driven from this process over one connection pool."""
    base = probe.snapshot()
    time.sleep(window)
    idle = probe.snapshot()
    shared = redis.Redis.from_url(probe.url)  # the pool grows to the threads' concurrency
    clients = [worqr.Worqr(probe.url, prefix="mesh", redis=shared) for _ in range(members)]
    try:
        for client in clients:
            client.start_worker()
        time.sleep(1.5)  # every member has beaten once
        before = probe.snapshot()
        time.sleep(window)
        after = probe.snapshot()
        connections = int(probe.client.info("clients")["connected_clients"])
        registered = len(clients[0].get_workers())
    finally:
        for client in clients:
            client.close()
        shared.close()
    idle_share = (idle.cpu - base.cpu) / (idle.at - base.at)
    busy_share = (after.cpu - before.cpu) / (after.at - before.at)
    commands = after.commands_since(before)
    seconds = after.at - before.at
    return {
        "members": members,
        "registered": registered,
        "redis_core_pct": (busy_share - idle_share) * 100,
        "idle_core_pct": idle_share * 100,
        "commands_per_s": sum(commands.values()) / seconds,
        "heartbeats_per_s": (commands["evalsha"] + commands["fcall"]) / seconds,
        "connections": connections,
        "reap_reads_per_s": (commands["smembers"] + commands["mget"]) / seconds,
    }


def _wakeups(probe: Probe, idle_workers: int) -> Metrics:
    """Wake-ups sent per enqueued task while ``idle_workers`` members of the queue
    wait for work: one each however many wait (no thundering herd). The members
    are simulated (ids in the queue's member and idle sets, as joining leaves
    them); the PUBLISH/SPUBLISH calls of the enqueue script are counted from
    INFO commandstats."""
    queue = f"herd-{idle_workers}"
    keys = MeshKeys("herd").queue(queue)
    ids = [f"sim-{i}" for i in range(idle_workers)]
    probe.client.sadd(keys.members, *ids)
    probe.client.sadd(keys.idle, *ids)
    producer = worqr.Worqr(probe.url, prefix="herd")
    tasks = max(1, idle_workers // 2)  # idle workers remain after the last task
    try:
        probe.client.config_resetstat()
        for i in range(tasks):
            producer.enqueue(queue, f"{i:020d}")
        stats = probe.client.info("commandstats")
        idle_after = int(probe.client.scard(keys.idle))
    finally:
        producer.delete_queue(queue)
        producer.close()
    sent = sum(int(stats.get(f"cmdstat_{cmd}", {}).get("calls", 0)) for cmd in PUBLISHES)
    return {"tasks": tasks, "idle_after": idle_after, "per_task": sent / tasks}


def scale(probe: Probe, quick: bool) -> Metrics:
    """worqr's per-operation cost at two queue depths, and the mesh's upkeep.

    Depths alternate in many short windows and the result is the median of the
    per-window ratios deep/shallow: on a loaded machine, noise moves whole
    windows, and pairing neighbours cancels most of it."""
    deep = 20_000 if quick else 1_000_000
    count, rounds = (100, 3) if quick else (300, 11)
    probe.reset()
    result: Metrics = {"deep": deep, "ops": count * rounds}
    queues = {"shallow": ("depth-10", 10), "deep": (f"depth-{deep}", deep)}
    samples: dict[str, list[float]] = defaultdict(list)
    client = worqr.Worqr(probe.url, prefix="scale")
    try:
        client.start_worker()
        for queue, depth in queues.values():
            _fill(client, queue, depth)
        for _ in range(rounds):
            for label, (queue, _) in queues.items():
                for name, number in _op_costs(probe, client, queue, count).items():
                    samples[f"{label}_{name}"].append(number)
        for label, (queue, _) in queues.items():
            result[f"{label}_depth_after"] = client.count_tasks(queue)
    finally:
        client.close()
    result.update({name: median(values) for name, values in samples.items()})
    for name in [n.removeprefix("deep_") for n in samples if n.startswith("deep_")]:
        pairs = zip(samples[f"deep_{name}"], samples[f"shallow_{name}"], strict=True)
        result[f"ratio_{name}"] = median([d / s for d, s in pairs if s > 0])
    probe.reset()
    members = 100 if quick else 1000
    for name, number in _heartbeat_load(probe, members, 2.0 if quick else 10.0).items():
        result[f"mesh_{name}"] = number
    for idle in (10, members):
        probe.reset()
        for name, number in _wakeups(probe, idle).items():
            result[f"wakeups_{idle}_idle_{name}"] = number
    return result
