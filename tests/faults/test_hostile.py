"""Fault scenario 11: hostile input through a real mesh: odd payloads (empty,
binary, NUL, non-UTF-8, 1 MB, 100 MB, over the limit), odd and invalid queue
names, and a flood of invalid enqueues mixed with valid ones."""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import worqr
from tests.support.fault_harness import Checker, Figures, Scenario, meshes, new_mesh, read_log
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.fault, pytest.mark.slow]

# Colons, glob characters, spaces, unicode, right-to-left text and a
# right-to-left override: all plain data.
QUEUES = ["a:b:c", "q*?[x]", "with space", "ünïcødé-队列", "שלום עולם", "\u202eevil", "big"]
BAD_NAMES: list[Any] = ["", "a{b}", "x}", "tab\there", "nl\n", "nul\x00", "x" * 257, b"q", 5, None]
BAD_TASKS: list[Any] = [None, 5, 1.5, ["a"], {"a": 1}, object()]
LIMIT = 64 * 1024  # the flood's clients refuse tasks over this size


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_hostile_input_through_a_real_mesh(
    scenario: Callable[..., Scenario], tmp_path: Path
) -> None:
    """Every valid task arrives byte for byte and runs once; every invalid call
    raises a clear TypeError/ValueError before writing anything."""
    seed, rng, server, prefix, client, _, log = scenario("hostile-input")
    expected: dict[str, list[bytes]] = {q: [] for q in QUEUES}
    refused: Counter[str] = Counter()
    odd = [b"", b"\x00", b"\x00" * 10, b"\xff\xfe\x00bin", bytes(range(256)), "é€😀".encode()]
    odd += [b"\xc3\x28", b"\xed\xa0\x80", b"x" * (1024 * 1024), rng.randbytes(1024 * 1024)]
    env = {"FAULT_QUEUES": json.dumps(QUEUES)}
    patient = worqr.Settings(prefix=prefix, socket_timeout=60)  # 100 MB on a busy machine
    with (
        meshes(tmp_path, server.url, prefix) as made,
        worqr.Worqr(server.url, settings=patient) as wq,
    ):
        # A long lease: moving 100 MB through Python on a busy machine may delay
        # heartbeats by seconds, and this scenario is about input, not leases.
        options = ("--concurrency", "4", "--ttl", "10", "--heartbeat", "1")
        mesh = new_mesh(made, tmp_path, server.url, prefix, **env).start(2, *options)
        wait_until(lambda: len(wq.get_workers()) == 2, timeout=30)

        for queue in QUEUES[:-1]:
            wq.enqueue_many(queue, odd)
            expected[queue] += odd
        huge = b"\x00\xff" + rng.randbytes(64) * (100 * 1024 * 1024 // 64)  # 100 MB, not UTF-8
        wq.enqueue("big", huge)
        expected["big"].append(huge)
        del huge

        # Invalid calls: refused before any write, with a message that says why.
        small = worqr.Settings(prefix=prefix, max_task_bytes=LIMIT)
        with worqr.Worqr(server.url, settings=small) as strict:
            for name in BAD_NAMES:
                with pytest.raises((TypeError, ValueError), match=r"queue name|str"):
                    strict.enqueue(name, b"x")
                refused["name"] += 1
            for task in BAD_TASKS:
                with pytest.raises(TypeError, match="task must be str or bytes"):
                    strict.enqueue("a:b:c", task)
                refused["type"] += 1
            with pytest.raises(ValueError, match="limit is 65536"):
                strict.enqueue("a:b:c", b"x" * (LIMIT + 1))
            with pytest.raises(ValueError, match="not encodable as UTF-8"):
                strict.enqueue("a:b:c", "\ud800")  # a lone surrogate
            with pytest.raises(ValueError, match="limit is 65536"):  # all or nothing
                strict.enqueue_many("a:b:c", [b"ok1", b"ok2", b"x" * (LIMIT + 1)])
            refused["size"] += 3

            flooded = flood(strict, rng.randrange(2**32), expected)
        refused.update(flooded)

        total = sum(len(v) for v in expected.values())
        wait_until(lambda: sum(1 for e in read_log(log) if e["e"] == "done") >= total, timeout=60)
        for queue in QUEUES:
            wait_until(lambda q=queue: Checker(client, prefix, q).quiescent(), timeout=10)
        assert mesh.stop() == 0
        assert wq.get_workers() == []
        # No rejected name was registered ("jobs" is fault_app's own queue).
        assert sorted(wq.get_queues()) == sorted([*QUEUES, "jobs"])

    records = read_log(log)
    figures = Figures("hostile-input", seed, f"{sum(refused.values())} invalid calls", total)
    duplicates = 0
    for queue, payloads in expected.items():
        checker = Checker(client, prefix, queue)
        runs = [e for e in records if e.get("q") == queue]
        starts = Counter(e["t"] for e in runs if e["e"] == "start")
        want = Counter(digest(p) for p in payloads)
        assert set(starts) == set(want), f"queue {queue!r}: payloads changed or lost"
        duplicates += sum((starts - want).values())
        stats = checker.stats()
        assert stats["enqueued"] == stats["finished"] == len(payloads), (queue, stats)
        lengths = {e["t"]: e["n"] for e in runs if e["e"] == "start"}
        assert all(lengths[digest(p)] == len(p) for p in payloads)
    assert duplicates == 0 or any(e["e"] == "stale" for e in records)
    figures.duplicates = duplicates
    # Nothing outside the valid queues' own keys (no partial state of refused calls).
    everyone = [*QUEUES, "jobs"]
    leftover = set.intersection(*(set(Checker(client, prefix, q).orphans()) for q in everyone))
    assert leftover == set()
    figures.extra.update({f"refused_{k}": v for k, v in sorted(refused.items())})
    figures.extra["largest_mb"] = 100
    figures.report()


def invalid_call(strict: worqr.Worqr, rng: random.Random, kind: str, queue: str) -> None:
    """One call invalid by ``kind`` (a bad queue name, a task of a bad type, or a
    task over the size limit); it must be refused (TypeError or ValueError)."""
    try:
        if kind == "name":
            strict.enqueue(rng.choice(BAD_NAMES), b"x")
        elif kind == "type":
            strict.enqueue_many(queue, [b"fine", rng.choice(BAD_TASKS)])
        else:
            strict.enqueue(queue, b"\x00" * (LIMIT + rng.randint(1, 100)))
    except (TypeError, ValueError):
        return
    raise AssertionError(f"an invalid {kind} call was accepted")


def flood(strict: worqr.Worqr, seed: int, expected: dict[str, list[bytes]]) -> Counter[str]:
    """Four threads, each 300 calls: one in four valid, the rest invalid."""
    refused: Counter[str] = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def run(index: int) -> None:
        rng = random.Random(seed + index)
        try:
            for n in range(300):
                kind = rng.choice(["valid", "name", "type", "size"])
                queue = rng.choice(QUEUES[:-1])
                if kind == "valid":
                    payload = f"{index}.{n}|".encode() + rng.randbytes(rng.randint(0, 64))
                    strict.enqueue(queue, payload)
                    with lock:
                        expected[queue].append(payload)
                    continue
                invalid_call(strict, rng, kind, queue)
                with lock:
                    refused[kind] += 1
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    return refused
