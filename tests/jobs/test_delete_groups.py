"""Deleting a job queue with fair-share groups costs the same with 10 or 5,000
groups: `delete_queue` renames the groups' hash to a grave (O(1)), and the
groups' ready keys go after it, `GRAVES_CHUNK` groups per `job_sweep_graves`
call, run by the deleter and, when it stopped half way, by the mesh's upkeep.
A queue made again names its ready keys with another epoch, so it never sees
the old jobs (against a real redis-server)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

import worqr
from tests.support.mesh import keys_under
from tests.support.scripts import SCRIPT_STATS
from worqr._core import graves
from worqr._core.calls import Call
from worqr._keys import MeshKeys

Make = Callable[..., worqr.Worqr]
Hook = Callable[[Call], None]
DELETE_COMMANDS = 40  # the delete script's inner commands, whatever the number of groups


def run(
    client: worqr.Worqr,
    plan: Iterator[Any],
    *,
    stop_after: str = "",
    counted: redis.Redis | None = None,
) -> tuple[list[Any], list[int]]:
    """Run a core plan step by step: the replies of its `job_sweep_graves` calls,
    and (with ``counted``, the server) the commands each `delete_queue` script
    call ran inside. With ``stop_after`` a script's name, the plan ends right
    after that script (as a client that died there)."""
    sweeps: list[Any] = []
    deletes: list[int] = []
    try:
        request = next(plan)
        while True:
            deleting = counted is not None and request.script == "delete_queue"
            if deleting:
                counted.config_resetstat()
            reply = client._execute(request, 0)
            if deleting:
                deletes.append(commands_run(counted))
            if request.script == "job_sweep_graves":
                sweeps.append([int(value) for value in reply])
            if request.script and request.script == stop_after:
                plan.close()
                break
            request = plan.send(reply)
    except StopIteration:
        pass
    return sweeps, deletes


def commands_run(raw: redis.Redis) -> int:
    """Commands the server ran since its stats were reset, inside scripts included;
    the scripts themselves, their loading and the stats' own commands not."""
    skipped = (
        *SCRIPT_STATS,
        "cmdstat_script",
        "cmdstat_function",
        "cmdstat_info",
        "cmdstat_config",
    )
    stats = raw.info("commandstats")
    return sum(int(value["calls"]) for name, value in stats.items() if not name.startswith(skipped))


def delete_script_commands(
    client: worqr.Worqr, raw: redis.Redis, queue: str
) -> tuple[int, list[Any]]:
    """Delete ``queue``: the commands its `delete_queue` script ran inside, and
    the replies of the sweep calls that followed."""
    sweeps, [commands] = run(client, client._core.deletion.delete_queue(queue), counted=raw)
    return commands, sweeps


def submit_groups(client: worqr.Worqr, queue: str, groups: int) -> None:
    """One queued job in each of ``groups`` groups (every other one with a
    priority, so both ready keys exist), and one ungrouped job."""
    for i in range(groups):
        client.submit(queue, f"g{i}", group=f"g{i}", priority=i % 2)
    client.submit(queue, "ungrouped")


def queue_keys_left(raw: redis.Redis, prefix: str, queue: str) -> list[bytes]:
    tag = MeshKeys(prefix).queue(queue).tag.encode()
    return [key for key in keys_under(raw, prefix) if key.startswith(tag)]


@pytest.mark.slow
def test_delete_runs_a_bounded_script_whatever_the_groups_and_the_sweep_leaves_no_key(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer = make()
    submit_groups(producer, "small", 10)
    submit_groups(producer, "big", 5000)
    mesh = MeshKeys(prefix)
    assert len(redis_client.keys(f"{mesh.queue('big').tag}:grp:*:r:*")) == 2500
    small, small_sweeps = delete_script_commands(producer, redis_client, "small")
    big, big_sweeps = delete_script_commands(producer, redis_client, "big")
    assert small == big <= DELETE_COMMANDS  # no command per group
    assert small_sweeps == [[0, 10]]  # a ready key per group (a list or a zset): one call
    # 5,000 groups in chunks of about GRAVES_CHUNK, each call bounded; together
    # every ready key (2,500 lists, 2,500 zsets), once.
    assert len(big_sweeps) >= 5000 // graves.GRAVES_CHUNK
    assert all(unlinked <= 4 * graves.GRAVES_CHUNK for _, unlinked in big_sweeps)
    assert sum(unlinked for _, unlinked in big_sweeps) == 5000
    assert big_sweeps[-1][0] == 0
    assert queue_keys_left(redis_client, prefix, "small") == []
    assert queue_keys_left(redis_client, prefix, "big") == []
    assert not redis_client.exists(mesh.graves)


def test_a_queue_made_again_never_sees_the_old_jobs_and_the_upkeep_ends_the_sweep(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """The deleter died right after the delete script: the old incarnation's
    ready keys are still there; the queue made again with the same groups runs
    only its own jobs, and the upkeep sweeps the grave."""
    producer, worker = make(), make(start=True)
    producer.submit_many("q", ["old-a1", "old-a2"], group="a")
    producer.submit("q", "old-b1", group="b", priority=3)
    producer.submit("q", "old-u")
    keys, mesh = MeshKeys(prefix).queue("q"), MeshKeys(prefix)
    old_epoch = redis_client.hget(keys.config, "groups")
    assert old_epoch is not None
    run(producer, producer._core.deletion.delete_queue("q"), stop_after="delete_queue")
    epoch = old_epoch.decode()
    old_ready = [keys.group_ready(epoch, "a"), keys.group_prio(epoch, "b")]
    assert redis_client.exists(*old_ready) == 2  # not swept yet
    assert redis_client.sismember(mesh.graves, "q")

    producer.submit("q", "new-a1", group="a")
    producer.submit("q", "new-b1", group="b", priority=3)
    producer.submit("q", "new-u")
    new_epoch = redis_client.hget(keys.config, "groups")
    assert new_epoch is not None and new_epoch != old_epoch
    queued = producer.get_jobs("q", "queued")[0]
    assert sorted(str(job.payload) for job in queued) == ["new-a1", "new-b1", "new-u"]
    assert {g.name: g.queued for g in producer.get_groups("q")[0]} == {"a": 1, "b": 1}
    assert [str(job.payload) for job in producer.get_jobs("q", "queued", group="a")[0]] == [
        "new-a1"
    ]
    _, taken, _ = worker.internals.take_jobs("q", [], 10)
    assert sorted(str(p.task) for p in taken) == ["new-a1", "new-b1", "new-u"]

    run(worker, worker._core.upkeep.tidy_job_queues())
    assert redis_client.exists(*old_ready) == 0
    assert not redis_client.exists(keys.group_graves, mesh.graves)
    assert producer.count_jobs("q")["active"] == 3  # the new incarnation untouched
    worker.internals.take_jobs("q", [(p, "s", b"ok") for p in taken], 0)
    producer.delete_queue("q")
    assert queue_keys_left(redis_client, prefix, "q") == []


def test_the_upkeep_sweeps_a_large_grave_over_passes_with_no_job_queue_left(
    make: Make, redis_client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bounded share per pass (UPKEEP_GRAVE_CALLS calls of about GRAVES_CHUNK
    groups), even when the mesh has no job queue left to tidy; a queue deleted
    twice before a sweep leaves two graves, both swept. (Over 512 groups each:
    a smaller hash may be a listpack, which HSCAN returns whole.)"""
    monkeypatch.setattr(graves, "GRAVES_CHUNK", 10)
    monkeypatch.setattr(graves, "UPKEEP_GRAVE_CALLS", 2)
    producer = make()
    mesh = MeshKeys(prefix)
    submit_groups(producer, "q", 600)
    run(producer, producer._core.deletion.delete_queue("q"), stop_after="delete_queue")
    submit_groups(producer, "q", 550)  # made again, deleted again, not swept either
    run(producer, producer._core.deletion.delete_queue("q"), stop_after="delete_queue")
    assert redis_client.hlen(mesh.queue("q").group_graves) == 2
    redis_client.srem(mesh.jobqueues, "q")  # as a delete that got that far: no queue to tidy
    passes = 0
    while redis_client.exists(mesh.graves):
        redis_client.delete(mesh.upkeep)  # the next pass is due at once
        before = len(queue_keys_left(redis_client, prefix, "q"))
        run(producer, producer._core.upkeep.tidy_job_queues())
        swept = before - len(queue_keys_left(redis_client, prefix, "q"))
        assert 0 < swept <= 2 * 3 * 10 + 2  # two calls of about 10 groups (and graves)
        passes += 1
        assert passes < 100
    assert passes >= 1150 // (2 * 3 * 10)
    assert queue_keys_left(redis_client, prefix, "q") == []


def test_reading_a_group_of_a_queue_without_groups_starts_no_epoch(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    """Only a grouped job starts the groups (and their epoch): a listing or a
    bulk cancel naming a group of a queue without any finds nothing and leaves
    the queue ungrouped, so the take keeps serving it in queue order."""
    producer, worker = make(), make(start=True)
    producer.submit_many("q", ["u1", "u2"])
    assert producer.get_jobs("q", "queued", group="x") == ([], None)
    assert producer.cancel_jobs("q", state="queued", group="x") == 0
    assert redis_client.hget(MeshKeys(prefix).queue("q").config, "groups") is None
    _, taken, _ = worker.internals.take_jobs("q", [], 10)
    assert [str(p.task) for p in taken] == ["u1", "u2"]
