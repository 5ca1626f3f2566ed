"""Schedules: cron and every, fired inside the promotion path with ids derived
from the fire time, so a fire creates one job however many members race for it
(against a real redis-server; workers in threads, or `worqr worker` processes
where it says so)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import redis

import worqr
from tests.support import APPS
from tests.support.cli import cli_env, start_cli
from tests.support.processes import stop
from tests.support.waiting import wait_until
from worqr._core import job_scripts
from worqr._core.lua import source
from worqr._schedules import cron_fires

from .conftest import Running, fast_worker


def fire_times(client: redis.Redis, prefix: str, queue: str, name: str) -> list[int]:
    """The fire times (ms) of the jobs the schedule created, from their ids."""
    head = f"cron:{name}:"
    ids = [i.decode() for i in client.hkeys(f"{{{prefix}:{queue}}}:job:data")]
    return sorted(int(i[len(head) :]) for i in ids if i.startswith(head))


def spec_of(client: redis.Redis, prefix: str, queue: str, name: str) -> dict[str, Any]:
    raw = client.hget(f"{{{prefix}:{queue}}}:job:sched", name)
    assert raw is not None
    loaded: dict[str, Any] = json.loads(raw)
    return loaded


def keys_of(client: redis.Redis, prefix: str) -> list[bytes]:
    return sorted(client.scan_iter(match=f"{{{prefix}*"))


def recording_worker(
    redis_url: str, prefix: str, queue: str, seen: list[str], **settings: Any
) -> worqr.Worker:
    worker = fast_worker(redis_url, prefix, **settings)

    @worker.job(queue)
    def handle(payload: str) -> str:
        seen.append(worqr.current_job().id)
        return payload

    return worker


def test_every_fires_each_period_once_with_ids_from_the_fire_time(
    make: Callable[..., worqr.Worqr],
    running: Running,
    redis_url: str,
    prefix: str,
    redis_client: redis.Redis,
) -> None:
    seen: list[str] = []
    running.start(recording_worker(redis_url, prefix, "ticks", seen))
    running.start(recording_worker(redis_url, prefix, "ticks", seen))
    wq = make()
    info = wq.schedule("ticks", "tick", every=0.2, payload="hello")
    assert info.every == 0.2 and info.cron is None and info.next_run is not None
    wait_until(lambda: len(seen) >= 8, timeout=10, message="eight fires ran")
    fires = fire_times(redis_client, prefix, "ticks", "tick")
    assert len(seen) == len(set(seen)), "a fire ran twice"
    assert fires == [fires[0] + 200 * k for k in range(len(fires))], "a period was missed"
    assert fires[0] == round(info.next_run * 1000)
    job = wq.get_job("ticks", f"cron:tick:{fires[0]}")
    assert job is not None and job.payload == "hello"
    (listed,) = wq.get_schedules("ticks")
    assert listed.name == "tick" and listed.next_run is not None and listed.next_run > info.next_run


def test_an_equal_spec_is_a_no_op_and_a_changed_one_replaces_it(
    make: Callable[..., worqr.Worqr], prefix: str, redis_client: redis.Redis
) -> None:
    producers = [make(), make()]
    first = producers[0].schedule("q", "nightly", cron="0 3 * * *", tz="Europe/Berlin", retries=2)
    stored = spec_of(redis_client, prefix, "q", "nightly")
    for wq in producers * 3:
        again = wq.schedule("q", "nightly", cron="0 3 * * *", tz="Europe/Berlin", retries=2)
        assert again.next_run == first.next_run
    assert spec_of(redis_client, prefix, "q", "nightly") == stored
    assert stored["j"] == {"R": 2} and len(stored["f"]) == 8
    berlin = [datetime.fromtimestamp(ms / 1000, ZoneInfo("Europe/Berlin")) for ms in stored["f"]]
    assert all((t.hour, t.minute) == (3, 0) for t in berlin)

    every = producers[1].schedule("q", "nightly", every=30)
    replaced = spec_of(redis_client, prefix, "q", "nightly")
    assert replaced["e"] == 30_000 and "c" not in replaced and replaced["v"] != stored["v"]
    assert every.every == 30.0 and every.next_run is not None
    assert [s.name for s in producers[0].get_schedules("q")] == ["nightly"]
    assert producers[0].get_schedules("q")[0].every == 30.0


BAD_SCHEDULES = [  # (arguments, the error, words it says)
    ({"cron": "* * * * *", "every": 5}, ValueError, "exactly one"),
    ({}, ValueError, "exactly one"),
    ({"cron": "61 * * * *"}, ValueError, "bad cron expression"),
    ({"cron": "0 3 * * *", "tz": "Mars/Olympus"}, ValueError, "unknown time zone"),
    ({"every": 0}, ValueError, "every must be"),
    ({"every": -1}, ValueError, "every must be"),
    ({"every": "5"}, TypeError, "every must be"),
    ({"every": 5, "name": ""}, ValueError, "schedule name"),
    ({"every": 5, "name": "a\nb"}, ValueError, "control character"),
    ({"every": 5, "retries": -1}, ValueError, "retries"),
    ({"every": 5, "delay": 3}, TypeError, "delay"),
    ({"every": 5, "unique": True}, TypeError, "unique"),
    ({"every": 5, "overlap": "no"}, TypeError, "overlap"),
    ({"every": 5, "payload": 3}, TypeError, "must be str or bytes"),
]


@pytest.mark.parametrize(("arguments", "error", "words"), BAD_SCHEDULES)
def test_bad_input_raises_and_writes_nothing(
    wq: worqr.Worqr,
    prefix: str,
    redis_client: redis.Redis,
    arguments: dict[str, Any],
    error: type[Exception],
    words: str,
) -> None:
    options = dict(arguments)  # the cases are shared with the Worker.cron test
    name = options.pop("name", "s")
    with pytest.raises(error, match=words):
        wq.schedule("q", name, **options)
    assert keys_of(redis_client, prefix) == []


@pytest.mark.parametrize(
    ("arguments", "error", "words"),
    [case for case in BAD_SCHEDULES if "payload" not in case[0]],  # encoded when it runs
)
def test_worker_cron_checks_its_arguments_when_declared(
    redis_url: str, prefix: str, arguments: dict[str, Any], error: type[Exception], words: str
) -> None:
    worker = fast_worker(redis_url, prefix)
    options = dict(arguments)
    name = options.pop("name", "s")
    with pytest.raises(error, match=words):
        worker.cron("q", name, **options)
    worker.cron("q", "s", every=5)  # nothing was kept: the name is still free


def test_unschedule_stops_the_fires_and_deleting_the_queue_removes_schedules(
    make: Callable[..., worqr.Worqr],
    running: Running,
    redis_url: str,
    prefix: str,
    redis_client: redis.Redis,
) -> None:
    seen: list[str] = []
    running.start(recording_worker(redis_url, prefix, "q", seen))
    wq = make()
    wq.schedule("q", "tick", every=0.1)
    wait_until(lambda: len(seen) >= 2, timeout=10)
    assert wq.unschedule("q", "tick") is True
    assert wq.unschedule("q", "tick") is False
    assert wq.get_schedules("q") == []
    stopped = len(fire_times(redis_client, prefix, "q", "tick"))
    # Ten periods later the count is the same (a period more at most: a fire
    # may have been running when it was removed).
    wq.schedule("q", "other", every=0.1)  # proves time passed: it fires meanwhile
    wait_until(lambda: len(fire_times(redis_client, prefix, "q", "other")) >= 10, timeout=10)
    assert len(fire_times(redis_client, prefix, "q", "tick")) == stopped

    wq.delete_queue("q")
    assert redis_client.exists(f"{{{prefix}:q}}:job:sched", f"{{{prefix}:q}}:job:sched:next") == 0
    assert wq.get_schedules("q") == []


def test_overlap_false_skips_fires_while_the_previous_job_is_live(
    make: Callable[..., worqr.Worqr],
    running: Running,
    redis_url: str,
    prefix: str,
    redis_client: redis.Redis,
) -> None:
    release = threading.Event()
    started: list[str] = []
    worker = fast_worker(redis_url, prefix)

    @worker.job("slow")
    def handle(payload: str) -> None:
        started.append(worqr.current_job().id)
        release.wait(20)

    running.start(worker)
    wq = make()
    wq.schedule("slow", "s", every=0.1, overlap=False)
    stats = f"{{{prefix}:slow}}:stats"
    wait_until(lambda: int(redis_client.hget(stats, "cron_skipped") or 0) >= 5, timeout=10)
    assert len(fire_times(redis_client, prefix, "slow", "s")) == 1 and len(started) == 1
    release.set()
    wait_until(lambda: len(started) >= 2, timeout=10, message="fires resume once it ended")
    assert wq.get_job("slow", started[0]).state == "finished"  # type: ignore[union-attr]


def test_a_schedule_whose_workers_were_all_down_fires_once_on_return(
    make: Callable[..., worqr.Worqr],
    running: Running,
    redis_url: str,
    prefix: str,
    redis_client: redis.Redis,
) -> None:
    jobs = worqr.JobSettings(misfire_grace=0.3)
    seen: list[str] = []
    first = running.start(recording_worker(redis_url, prefix, "q", seen, jobs=jobs))
    wq = make()
    wq.schedule("q", "tick", every=0.1)
    wait_until(lambda: len(seen) >= 3, timeout=10)
    first.stop()
    members = f"{{{prefix}:q}}:members"
    wait_until(lambda: redis_client.scard(members) == 0, timeout=10)
    down = round(wq.server_time() * 1000)
    before = fire_times(redis_client, prefix, "q", "tick")
    # Twenty periods pass with no member: nothing fires.
    wait_until(lambda: wq.server_time() * 1000 > down + 2000, timeout=10, interval=0.1)
    assert fire_times(redis_client, prefix, "q", "tick") == before
    up = round(wq.server_time() * 1000)
    running.start(recording_worker(redis_url, prefix, "q", seen, jobs=jobs))
    wait_until(
        lambda: len(fire_times(redis_client, prefix, "q", "tick")) >= len(before) + 3, timeout=10
    )
    after = fire_times(redis_client, prefix, "q", "tick")
    assert after[: len(before)] == before
    new = after[len(before) :]
    # The twenty missed periods made one job (the latest missed fire), then the
    # schedule went on period by period.
    assert new[0] > up - 100, "it fired for a period while no one served it"
    assert new == [new[0] + 100 * k for k in range(len(new))], "once on return, then each period"


def test_a_cron_schedule_fires_the_librarys_times_across_dst_changes(
    make: Callable[..., worqr.Worqr], prefix: str, redis_client: redis.Redis
) -> None:
    """Time is driven through the buffer: the library's fire times around a DST
    change are sent as a refill (a fire owed since then, with a misfire grace
    of decades so each one creates its job); each creates exactly its job."""
    wq = make(start=True, jobs=worqr.JobSettings(misfire_grace=1e9))
    wq.start_work("q")  # a member: schedules fire only for queues someone serves
    berlin = ZoneInfo("Europe/Berlin")
    cases = [  # (cron, local start, local end, the expected UTC fire times)
        (
            "30 2 * * *",  # 02:30 does not exist on 31 March 2024: it fires at 03:00
            datetime(2024, 3, 29, 12, tzinfo=berlin),
            datetime(2024, 4, 1, 12, tzinfo=berlin),
            ["2024-03-30T01:30", "2024-03-31T01:00", "2024-04-01T00:30"],
        ),
        (
            "30 2 * * *",  # 02:30 happens twice on 27 October 2024: it fires once
            datetime(2024, 10, 26, 12, tzinfo=berlin),
            datetime(2024, 10, 28, 12, tzinfo=berlin),
            ["2024-10-27T00:30", "2024-10-28T01:30"],
        ),
        (
            "*/30 1-3 * * *",  # more often than hourly: both 02:xx hours fire
            datetime(2024, 10, 27, 0, tzinfo=berlin),
            datetime(2024, 10, 27, 3, 59, tzinfo=berlin),
            [
                "2024-10-26T23:00",
                "2024-10-26T23:30",
                "2024-10-27T00:00",
                "2024-10-27T00:30",
                "2024-10-27T01:00",
                "2024-10-27T01:30",
                "2024-10-27T02:00",
                "2024-10-27T02:30",
            ],
        ),
    ]
    for n, (cron, start, end, expected) in enumerate(cases):
        name = f"dst{n}"
        wq.schedule("q", name, cron=cron, tz="Europe/Berlin")
        start_ms, end_ms = round(start.timestamp() * 1000), round(end.timestamp() * 1000)
        fires = [t for t in cron_fires(cron, "Europe/Berlin", start_ms, end_ms) if t <= end_ms]
        utc = [datetime.fromtimestamp(t / 1000, UTC).strftime("%Y-%m-%dT%H:%M") for t in fires]
        assert utc == expected, "the library's fire times"
        version = spec_of(redis_client, prefix, "q", name)["v"]
        call = job_scripts.job_sched_refill(
            wq._core.state.queue_keys("q"),
            name,
            version,
            fires,
            publish="PUBLISH",
            policy=wq._core.state.settings.jobs.policy,
        )
        for _ in range(2):  # a second, equal refill creates nothing
            redis_client.evalsha(
                redis_client.script_load(source("job_sched_refill")),
                len(call.keys),
                *call.keys,
                *call.args,
            )
        assert fire_times(redis_client, prefix, "q", name) == fires


@pytest.mark.slow
def test_every_second_for_20_s_with_4_worker_processes_and_2_producers_runs_once_per_second(
    redis_url: str, prefix: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """4 `worqr worker` processes (each declaring the schedule with worker.cron)
    and 2 producers calling schedule() in a loop: one job per second, no
    duplicates, none missing."""
    env = cli_env(PYTHONPATH=str(APPS), SCHEDULE_RECORD=prefix)
    args = ["worker", "schedule_app:worker", "--url", redis_url, "--prefix", prefix]
    log = open(tmp_path / "workers.log", "ab")  # noqa: SIM115 (closed below)
    workers = start_cli(*args, "--processes", "4", env=env, stdout=log, stderr=log)
    stop_producing = threading.Event()
    calls: list[int] = []

    def produce() -> None:
        with worqr.Worqr(redis_url, prefix=prefix) as wq:
            while not stop_producing.wait(0.05):
                wq.schedule("ticks", "tick", every=1, payload="tick")
                calls.append(1)

    producers = [threading.Thread(target=produce) for _ in range(2)]
    members = f"{{{prefix}:ticks}}:members"
    try:
        wait_until(lambda: redis_client.scard(members) == 4, timeout=60, message="4 workers")
        for thread in producers:
            thread.start()
        wait_until(
            lambda: len(fire_times(redis_client, prefix, "ticks", "tick")) >= 21,
            timeout=40,
            interval=0.2,
            message="20 s of fires",
        )
    finally:
        stop_producing.set()
        for thread in producers:
            thread.join(10)
        stop(workers)
        log.close()
    fires = fire_times(redis_client, prefix, "ticks", "tick")
    assert fires == [fires[0] + 1000 * k for k in range(len(fires))], "a second was missed"
    ran = [entry.decode().split(" ")[0] for entry in redis_client.lrange(f"{prefix}:ran", 0, -1)]
    assert len(ran) == len(set(ran)), "a job ran twice"
    assert set(ran) <= {f"cron:tick:{t}" for t in fires}
    assert len(ran) >= len(fires) - 1  # the last one may still have been running
    assert len(calls) > 100, "the producers kept declaring it"
    pids = {entry.decode().split(" ")[1] for entry in redis_client.lrange(f"{prefix}:ran", 0, -1)}
    assert len(pids) >= 2, "the fires were spread over the workers"
