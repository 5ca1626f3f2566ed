"""What a worker's steady state costs Redis on a job queue: `job_take` finishes a
batch and takes the next in one script call, with a bounded number of commands
inside per job, the same with 10 or 10,000 jobs waiting, and exact counts."""

from __future__ import annotations

from collections.abc import Callable

import redis

import worqr
from tests.support.scripts import SCRIPT_STATS
from worqr._jobs import STATES, JobProcess
from worqr.embedded import EmbeddedRedis

BATCH = 8
# A take and a finish cost 3.5 commands a job at a batch of 8 (28 a call): one
# command more per job (an HGET, an HINCRBY) breaks this bound.
COMMANDS_PER_JOB = 4.0


def commands_run(raw: redis.Redis) -> int:
    """Commands the server ran, the scripts' inner ones included, the scripts not."""
    stats = raw.info("commandstats")
    return sum(
        int(value["calls"])
        for name, value in stats.items()
        if name not in (*SCRIPT_STATS, "cmdstat_function", "cmdstat_info", "cmdstat_config")
    )


def drain(
    worker: worqr.Worqr, calls: int, held: list[JobProcess]
) -> tuple[list[bool], list[JobProcess]]:
    """``calls`` takes of BATCH, each carrying the finishes of the batch before;
    the finishes' flags, and the last batch (still held)."""
    flags: list[bool] = []
    for _ in range(calls):
        done, held, _ = worker.internals.take_jobs("q", [(p, "s", b"ok") for p in held], BATCH)
        flags += done
    return flags, held


def per_job_cost(make_redis: Callable[..., EmbeddedRedis], waiting: int) -> float:
    """Commands run per job while one worker drains 400 jobs with ``waiting`` more
    behind them."""
    server = make_redis()
    raw = redis.Redis.from_url(server.url)
    measured = 400
    with worqr.Worqr(server.url) as producer, worqr.Worqr(server.url) as worker:
        producer.submit_many("q", [f"j{i}" for i in range(measured + waiting)])
        worker.start_worker()
        _, held = drain(worker, 1, [])  # scripts loaded, the worker a member
        raw.config_resetstat()
        flags, held = drain(worker, measured // BATCH, held)  # a take and a finish each
        cost = commands_run(raw) / measured
        counts = producer.count_jobs("q")
    raw.close()
    assert all(flags) and len(flags) == measured
    expected = dict.fromkeys(STATES, 0) | {
        "queued": waiting - BATCH,
        "active": BATCH,
        "finished": measured,
    }
    assert counts == expected
    return cost


def test_a_job_costs_a_bounded_number_of_commands_however_many_wait(
    make_redis: Callable[..., EmbeddedRedis],
) -> None:
    shallow = per_job_cost(make_redis, 10)
    deep = per_job_cost(make_redis, 10_000)
    assert shallow <= COMMANDS_PER_JOB, shallow
    assert deep <= COMMANDS_PER_JOB, deep
    assert abs(deep - shallow) <= 0.5, (shallow, deep)


def test_a_priority_mix_is_taken_in_order_by_batches(make: Callable[..., worqr.Worqr]) -> None:
    """Batches pop the priority zset one entry at a time and the list many at once:
    higher priorities first, equal ones in submit order, nothing taken twice."""
    producer, worker = make(), make(start=True)
    producer.submit_many("q", ["low-1", "low-2"], priority=-1)
    producer.submit_many("q", [f"plain-{i}" for i in range(12)])
    producer.submit_many("q", ["high-1", "high-2"], priority=5)
    seen: list[str] = []
    held: list[JobProcess] = []
    while True:
        _, held, _ = worker.internals.take_jobs("q", [(p, "n", b"") for p in held], 5)
        if not held:
            break
        seen += [str(process.task) for process in held]
    assert seen == ["high-1", "high-2", *[f"plain-{i}" for i in range(12)], "low-1", "low-2"]
    assert producer.count_jobs("q")["finished"] == 16
