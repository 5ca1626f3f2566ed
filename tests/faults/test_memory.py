"""Fault scenario 10: Redis memory. `maxmemory` reached under `noeviction`
refuses enqueues with a clear error and loses nothing; an evicting policy is
detected when a worker starts and warned about."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

import worqr
from tests.support.fault_harness import QUEUE, Figures, Scenario, meshes, new_mesh, read_log
from tests.support.waiting import wait_until
from worqr.embedded import EmbeddedRedis

pytestmark = pytest.mark.fault

TTL, HEARTBEAT = 1.0, 0.2
PADDING = 8 * 1024


@pytest.mark.slow
def test_maxmemory_noeviction_refuses_clearly_and_loses_nothing(
    scenario: Callable[..., Scenario], tmp_path: Path
) -> None:
    """A producer pushes 12 MB of tasks into a 6 MB Redis while a mesh drains it.
    Enqueues over the limit fail with OutOfMemoryError, were not applied (the
    producer retries each until accepted, and each task is enqueued once), and
    the workers keep their leases and keep draining meanwhile: a worker whose
    heartbeat Redis refused would lose its lease and could not rejoin a full
    Redis, and nothing would ever drain it again."""
    seed, rng, server, prefix, _, checker, log = scenario(
        "maxmemory", extra_args=["--maxmemory", "6mb", "--maxmemory-policy", "noeviction"]
    )
    # Long tasks first: while every slot holds one, nothing drains and the
    # producer keeps Redis full for longer than the TTL.
    longs = [f"L{i}" for i in range(4)]
    tasks = longs + [f"t{i}" for i in range(1500)]
    refusals: list[str] = []
    options = ("--ttl", str(TTL), "--heartbeat", str(HEARTBEAT), "--concurrency", "2")
    with meshes(tmp_path, server.url, prefix) as made, worqr.Worqr(server.url, prefix=prefix) as wq:
        mesh = new_mesh(made, tmp_path, server.url, prefix).start(2, *options)
        wait_until(lambda: len(wq.get_workers()) == 2, timeout=30)
        began = time.monotonic()
        for task in tasks:
            millis = int(TTL * 2000) if task in longs else rng.randint(2, 10)
            payload = f"{task}:{millis}:" + "x" * PADDING
            while True:
                try:
                    wq.enqueue(QUEUE, payload)
                    break
                except redis.exceptions.OutOfMemoryError as error:
                    refusals.append(str(error))
                    time.sleep(0.02)
                assert time.monotonic() - began < 60, "the mesh stopped draining a full Redis"
        drained = checker.wait_quiescent(timeout=30)
        assert mesh.stop() == 0
        assert wq.get_workers() == []

    records = read_log(log)
    figures = Figures("maxmemory", seed, "maxmemory 6mb, noeviction, 12 MB pushed", len(tasks))
    figures.recover_s = drained - began
    figures.extra["refused_enqueues"] = len(refusals)
    checker.verify(figures, records, tasks)
    figures.report()
    assert refusals, "Redis never ran out of memory"
    assert all("maxmemory" in text for text in refusals), refusals[0]
    assert figures.lease_losses == 0 and figures.duplicates == 0
    assert checker.orphans() == []


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-ttl", "allkeys-random"])
def test_an_evicting_policy_is_warned_about_at_start(
    policy: str,
    make_redis: Callable[..., EmbeddedRedis],
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = make_redis(extra_args=["--maxmemory", "64mb", "--maxmemory-policy", policy])
    prefix = f"f{uuid.uuid4().hex[:10]}"
    with (
        caplog.at_level(logging.WARNING, logger="worqr"),
        worqr.Worqr(server.url, prefix=prefix) as wq,
    ):
        wq.start_worker()
        wq.start_worker()  # once per client
    warnings = [r.getMessage() for r in caplog.records if "maxmemory-policy" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert policy in warnings[0] and "noeviction" in warnings[0]


def test_noeviction_and_a_forbidden_config_are_quiet(
    make_redis: Callable[..., EmbeddedRedis], caplog: pytest.LogCaptureFixture
) -> None:
    """The check is advice: a user without the CONFIG command still starts."""
    server = make_redis(extra_args=["--maxmemory-policy", "noeviction"])
    prefix = f"f{uuid.uuid4().hex[:10]}"
    with redis.Redis.from_url(server.url) as admin:
        admin.acl_setuser(
            "app",
            enabled=True,
            passwords=["+secret"],
            keys=["*"],
            channels=["*"],
            commands=["+@all", "-config"],
        )
    with caplog.at_level(logging.DEBUG, logger="worqr"):
        with worqr.Worqr(server.url, prefix=prefix) as wq:
            assert wq.start_worker()
        url = server.url.replace("redis://", "redis://app:secret@")
        with worqr.Worqr(url, prefix=prefix) as wq:
            assert wq.start_worker()
            wq.enqueue("q", "x")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_enqueue_many_that_fills_redis_says_how_many_went_in(
    make_redis: Callable[..., EmbeddedRedis],
) -> None:
    """Batches are separate scripts: when Redis fills up after the first, the
    error must say how many tasks were enqueued, or a caller that retries the
    whole call enqueues those twice."""
    limit = 8 * 1024 * 1024
    server = make_redis(extra_args=["--maxmemory", str(limit), "--maxmemory-policy", "noeviction"])
    prefix = f"f{uuid.uuid4().hex[:10]}"
    with redis.Redis.from_url(server.url) as admin, worqr.Worqr(server.url, prefix=prefix) as wq:
        index = 0
        while int(admin.info("memory")["used_memory"]) < limit - 1600 * 1024:
            admin.set(f"ballast{index}", b"b" * 64 * 1024)  # small writes: no big query buffer
            index += 1
        tasks = [f"{i:06d}".encode() + b"p" * 1024 for i in range(3000)]  # 3 MB, 3 batches
        with pytest.raises(redis.exceptions.OutOfMemoryError) as caught:
            wq.enqueue_many(QUEUE, tasks)
        queued = wq.count_tasks(QUEUE)
        assert 0 < queued < len(tasks)
        assert f"{queued} of {len(tasks)} tasks were enqueued" in str(caught.value)
        assert "maxmemory" in str(caught.value)
