"""The job layer on a real 3-master Redis Cluster: every job script touches one
slot (a cross-slot call would fail with CROSSSLOT), on queues spread over the
masters; the lifecycle tests run here unchanged, on cluster clients."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from redis.cluster import RedisCluster

import worqr
from tests.support.cluster import LocalCluster, redis_cluster, redis_cluster_url
from tests.support.waiting import async_wait_until, wait_until
from worqr._core import flow_scripts
from worqr._core.calls import command
from worqr._core.lua import script_names

from .conftest import QUIET
from .test_lifecycle import (
    test_a_finish_is_fenced_and_counted_once,
    test_cancel_reaches_every_live_state,
    test_failures_retry_after_their_delay_then_fail,
    test_get_jobs_pages_through_each_state,
    test_queues_no_worker_serves_are_tidied_once_per_interval_for_the_mesh,
    test_result_waits_for_the_end_without_polling,
    test_retention_is_logical_exact_and_bounded,
    test_retry_job_gives_a_new_life_and_respects_the_unique_marker,
    watched,
)
from .test_pause import (
    test_a_paused_queue_accepts_finishes_and_promotes_but_starts_nothing,
    test_a_paused_schedule_fires_nothing_then_once_for_the_times_it_missed,
    test_resume_wakes_as_many_idle_workers_as_ready_jobs,
    test_resume_wakes_no_more_idle_workers_than_the_limits_let_start,
)
from .test_submit import test_a_queue_holds_tasks_or_jobs_never_both

pytestmark = pytest.mark.cluster

__all__ = [  # borrowed, collected here with this module's fixtures
    "redis_cluster",
    "redis_cluster_url",
    "test_a_finish_is_fenced_and_counted_once",
    "test_a_paused_queue_accepts_finishes_and_promotes_but_starts_nothing",
    "test_a_paused_schedule_fires_nothing_then_once_for_the_times_it_missed",
    "test_a_queue_holds_tasks_or_jobs_never_both",
    "test_cancel_reaches_every_live_state",
    "test_failures_retry_after_their_delay_then_fail",
    "test_get_jobs_pages_through_each_state",
    "test_queues_no_worker_serves_are_tidied_once_per_interval_for_the_mesh",
    "test_result_waits_for_the_end_without_polling",
    "test_resume_wakes_as_many_idle_workers_as_ready_jobs",
    "test_resume_wakes_no_more_idle_workers_than_the_limits_let_start",
    "test_retention_is_logical_exact_and_bounded",
    "test_retry_job_gives_a_new_life_and_respects_the_unique_marker",
]


@pytest.fixture
def redis_client(redis_cluster: LocalCluster) -> Iterator[Any]:
    client = RedisCluster.from_url(redis_cluster.url)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def make(redis_cluster_url: str, prefix: str) -> Iterator[Callable[..., worqr.Worqr]]:
    made: list[worqr.Worqr] = []

    def build(start: bool = False, **settings: Any) -> worqr.Worqr:
        client = worqr.Worqr(
            redis_cluster_url,
            settings=worqr.Settings(prefix=prefix, **(QUIET | settings)),
            cluster=True,
        )
        made.append(client)
        if start:
            client.start_worker()
        return client

    yield build
    with ThreadPoolExecutor(max(1, len(made))) as pool:
        list(pool.map(lambda client: client.close(), made))


def test_every_job_script_runs_on_the_cluster(make: Callable[..., worqr.Worqr]) -> None:
    producer, worker = make(), make(start=True)
    ran: set[str] = set()
    for client in (producer, worker):
        execute_once = client._executor._execute_once

        def counting(request: Any, execute_once: Any = execute_once) -> Any:
            if getattr(request, "script", None):
                ran.add(request.script)
            return execute_once(request)

        client._executor._execute_once = counting  # type: ignore[method-assign]
    for queue in (f"jobs-{i}" for i in range(6)):  # slots on every master
        ref = producer.submit(queue, "a", unique=True)
        producer.submit(queue, "later", delay=0.05)
        worker.internals.mark_job_queue(queue)
        # One: on a loaded machine "later" may be due already (50 ms), and run after "a".
        _, taken, _ = worker.internals.take_jobs(queue, [], 1)
        [process] = taken
        assert process.job_id == ref.id
        assert worker.internals.report_progress(process, b"half")
        assert worker.internals.append_job_log(process, [b"a line"])  # job_log
        assert producer.get_job_log(queue, ref.id) == ["a line"]  # job_log_read
        assert worker.internals.fail_job(process, mode="error", delay=0, retries=1, error="E") == (
            True,
            "r",
        )

        def promoted(queue: str = queue) -> bool:
            worker.internals.promote_due(queue)
            return producer.count_jobs(queue)["queued"] == 2

        wait_until(promoted)
        _, taken, _ = worker.internals.take_jobs(queue, [], 5)
        assert len(taken) == 2
        for process in taken:
            if process.job_id == ref.id:
                worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="Fail")
            else:
                worker.internals.stop_job(process)
        assert producer.retry_job(queue, ref.id)
        assert producer.get_job(queue, ref.id) is not None
        assert producer.cancel_job(queue, ref.id)
        producer.submit(queue, "f", retries=0)
        producer.configure_queue(queue, rate=(1000, 1.0), max_active=100)  # job_limits
        assert producer.get_limits(queue).max_active == 100
        _, taken, _ = worker.internals.take_jobs(queue, [], 5)
        for process in taken:
            worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="Fail")
        assert producer.requeue_failed(queue) == 2  # "later" (stopped, then failed) and "f"
        assert producer.cancel_tasks(queue, "later") == 1  # its one live copy: job_cancel_payload
        assert [job.payload for job in producer.get_jobs(queue, "queued")[0]] == ["f"]
        assert producer.count_jobs(queue)["cancelled"] == 2  # "a" and "later"
        assert producer.cancel_tasks(queue, "later") == 0  # no live copy is left
        producer.configure_queue(queue, rate=(1000, 1.0), max_active=100)  # job_limits
        assert producer.get_limits(queue).max_active == 100
        _, taken, _ = worker.internals.take_jobs(queue, [], 5)
        for process in taken:
            worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="Fail")
        assert producer.purge_failed(queue) == 1  # "f", failed again
        assert producer.count_jobs(queue)["active"] == 0
        exercise_schedules(producer, worker, queue)
        exercise_pauses(producer, worker, queue)
        exercise_groups(producer, worker, queue)  # on an empty queue: before bulk
        exercise_bulk(producer, worker, queue)
        worker.fail_worker()  # job_requeue_owned
        producer.delete_queue(queue)
        assert producer.get_job_log(queue, ref.id) is None  # its log swept with it
    # Flows, their hops across the masters: submit, relay, report, cancel.
    chain = producer.submit_chain([worqr.Step("flow-0", "x"), worqr.Step("flow-1")])
    worker.internals.mark_job_queue("flow-0")
    _, [process], _ = worker.internals.take_jobs("flow-0", [], 1)
    worker.internals.take_jobs("flow-0", [(process, "s", b"r")], 0)  # job_flow_submit on flow-1
    assert producer.get_job("flow-1", f"{chain.id}.1").payload == "r"
    tree = producer.submit_flow(worqr.FlowJob("flow-2", children=[worqr.FlowJob("flow-3")]))
    worker.internals.mark_job_queue("flow-3")
    _, [child], _ = worker.internals.take_jobs("flow-3", [], 1)
    worker.internals.fail_job(child, mode="fail", delay=0, retries=0, error="E")  # job_child_done
    assert producer.get_flow(tree.id).state == "failed"
    assert producer.cancel_flow(chain.id)  # job_flow_cancel
    assert producer.relay() == 0  # job_outbox_claim; every hop was acked (job_outbox_ack)

    def outbox_age() -> Any:  # the exporter's read
        return (yield flow_scripts.job_outbox_age(producer._core.state.queue_keys("flow-0")))

    assert producer._drive(outbox_age()) == [0, 0]
    job_scripts = {name for name in script_names() if name.startswith(("job_", "flow_"))}
    assert job_scripts <= ran, job_scripts - ran


def exercise_groups(producer: worqr.Worqr, worker: worqr.Worqr, queue: str) -> None:
    """Fair-share groups in one slot: job_group_limits, job_group_pause,
    job_group_resume, job_groups, and the take's round robin between them."""
    producer.configure_group(queue, "g1", max_active=1)
    producer.pause(queue, group="g2")
    producer.submit_many(queue, ["x1", "x2"], group="g1")
    producer.submit_many(queue, ["y1"], group="g2")
    producer.submit(queue, "z1", group="g3")
    _, taken, _ = worker.internals.take_jobs(queue, [], 5)
    assert sorted(str(p.task) for p in taken) == ["x1", "z1"]  # g1 capped, g2 paused
    producer.resume(queue, group="g2")
    _, more, _ = worker.internals.take_jobs(queue, [(p, "s", b"") for p in taken], 5)
    assert sorted(str(p.task) for p in more) == ["x2", "y1"]
    groups = {g.name: g for g in producer.get_groups(queue)[0]}
    assert groups["g1"].active == 1 and groups["g1"].max_active == 1
    worker.internals.take_jobs(queue, [(p, "s", b"") for p in more], 0)
    producer.configure_group(queue, "g1", max_active=None)
    assert producer.get_groups(queue) == ([], None)


def exercise_schedules(producer: worqr.Worqr, worker: worqr.Worqr, queue: str) -> None:
    """job_sched_set, the firing take, job_sched_refill and job_sched_remove on
    ``queue``'s slot."""
    worker.start_work(queue)
    info = producer.schedule(queue, "c", cron="* * * * *", tz="Asia/Tokyo")
    assert info.next_run is not None
    spec = producer.get_schedules(queue)[0]
    assert spec.cron == "* * * * *" and spec.tz == "Asia/Tokyo"
    version = json.loads(worker._drive(_read_spec(worker, queue, "c")))["v"]
    now = round(worker.server_time() * 1000)
    request = ["c", version, "* * * * *", "Asia/Tokyo", str(now - 180_000), str(now)]
    worker._drive(
        worker._core.schedule_refill.refill_schedules(queue, request)
    )  # fires the missed minute
    assert any(job.id.startswith("cron:c:") for job in producer.get_jobs(queue, "queued")[0])
    producer.schedule(queue, "e", every=0.05)

    def fired() -> bool:
        _, taken, _ = worker.internals.take_jobs(queue, [], 10)
        for process in taken:
            worker.internals.stop_job(process)
        return any(p.job_id.startswith("cron:e:") for p in taken)

    wait_until(fired, timeout=10, message="an every schedule fired on the cluster")
    assert producer.unschedule(queue, "c") and producer.unschedule(queue, "e")


def exercise_pauses(producer: worqr.Worqr, worker: worqr.Worqr, queue: str) -> None:
    """job_pause, job_resume, job_sched_pause and job_sched_resume on ``queue``'s
    slot: paused, nothing starts; resumed, it does."""
    producer.pause(queue)
    ref = producer.submit(queue, "held")
    assert producer.is_paused(queue) and worker.internals.take_jobs(queue, [], 10)[1] == []
    producer.resume(queue)
    _, taken, _ = worker.internals.take_jobs(queue, [], 10)
    assert ref.id in [process.job_id for process in taken]
    worker.internals.take_jobs(queue, [(process, "s", b"") for process in taken], 0)
    producer.schedule(queue, "held", every=3600)
    assert producer.pause_schedule(queue, "held") and producer.get_schedules(queue)[0].paused
    assert producer.resume_schedule(queue, "held") and not producer.get_schedules(queue)[0].paused
    assert producer.unschedule(queue, "held")


def exercise_bulk(producer: worqr.Worqr, worker: worqr.Worqr, queue: str) -> None:
    """The bulk scripts, job_update and delete_queue(if_idle=True) on ``queue``'s slot."""
    ref = producer.submit(queue, "u", delay=600)
    grouped = producer.submit(queue, "v", group="g", delay=600)  # its group's keys too
    assert producer.update_job(queue, ref.id, priority=2)  # job_update
    assert producer.update_job(queue, grouped.id, priority=1)
    assert producer.promote_jobs(queue) == 2  # job_promote_many
    _, [process], _ = worker.internals.take_jobs(queue, [], 1)
    with pytest.raises(worqr.QueueBusyError):
        producer.delete_queue(queue, if_idle=True)
    counts = producer.count_jobs(queue)
    live = sum(counts[state] for state in ("delayed", "retrying", "queued", "active"))
    assert producer.cancel_jobs(queue) == live  # job_cancel_many
    assert producer.retry_jobs(queue, state="cancelled", limit=1) == 1  # job_retry_many
    cancelled = producer.count_jobs(queue)["cancelled"]
    assert producer.purge_jobs(queue, "cancelled") == cancelled  # job_purge_many
    worker.internals.take_jobs(queue, [(process, "s", b"")], 0)  # fenced: cancelled


def test_bulk_operations_on_the_cluster(make: Callable[..., worqr.Worqr]) -> None:
    """Queues on every master, each larger than one chunk: exact counts."""
    producer, worker = make(), make(start=True)
    many = 1500
    for queue in (f"bulk-{i}" for i in range(3)):
        producer.submit_many(queue, [f"p{i}" for i in range(many)], delay=600)
        assert producer.promote_jobs(queue, limit=1200) == 1200
        assert producer.count_jobs(queue)["queued"] == 1200
        _, taken, _ = worker.internals.take_jobs(queue, [], 2)
        with pytest.raises(worqr.QueueBusyError):
            producer.delete_queue(queue, if_idle=True)
        assert producer.cancel_jobs(queue) == many
        assert producer.count_jobs(queue)["cancelled"] == many
        assert producer.retry_jobs(queue, limit=1100) == 1100
        assert producer.purge_jobs(queue, "cancelled", limit=300) == 300
        counts = producer.count_jobs(queue)
        assert (counts["queued"], counts["cancelled"]) == (1100, many - 1400)
        assert not producer.update_job(queue, taken[0].job_id, priority=1)  # cancelled
        producer.delete_queue(queue, if_idle=True)
        assert producer.count_jobs(queue)["queued"] == 0


def test_grouped_listing_and_group_cancel_on_the_cluster(make: Callable[..., worqr.Worqr]) -> None:
    """get_jobs reads a page of groups in one pinned round trip: on every master."""
    producer = make()
    for queue in (f"groups-{i}" for i in range(3)):
        for g in range(30):
            producer.submit_many(queue, [f"{g}:{i}" for i in range(3)], group=f"g{g}")
        producer.submit_many(queue, ["u1", "u2"])
        seen, cursor = [], None
        while True:
            page, cursor = producer.get_jobs(queue, "queued", limit=7, cursor=cursor)
            seen += [str(job.payload) for job in page]
            if cursor is None:
                break
        assert sorted(seen) == sorted(
            ["u1", "u2"] + [f"{g}:{i}" for g in range(30) for i in range(3)]
        )
        assert producer.cancel_jobs(queue, group="g7") == 3
        assert producer.count_jobs(queue)["queued"] == 89
        producer.delete_queue(queue)


def _read_spec(client: worqr.Worqr, queue: str, name: str) -> Any:
    value = yield command("HGET", client._core.state.queue_keys(queue).job_sched, name)
    return value


@pytest.mark.serial
def test_async_result_on_the_cluster(
    make: Callable[..., worqr.Worqr], redis_client: Any, redis_cluster_url: str, prefix: str
) -> None:
    worker = make(start=True)

    async def main() -> None:
        # poll_interval 30 s: only the done message can end the wait soon.
        settings = worqr.Settings(prefix=prefix, poll_interval=30.0)
        async with worqr.AsyncWorqr(redis_cluster_url, settings=settings, cluster=True) as producer:
            ref = await producer.submit("waited", "x")
            waiting = asyncio.create_task(producer.result("waited", ref.id, timeout=10))
            await async_wait_until(
                lambda: watched(redis_client, prefix, "waited", ref.id),
                message="result() waits for the job",
            )

            def finish() -> None:
                _, [process], _ = worker.internals.take_jobs("waited", [], 1)
                worker.internals.take_jobs("waited", [(process, "s", b"done")], 0)

            started = time.monotonic()
            await asyncio.to_thread(finish)
            assert await waiting == "done"
            assert time.monotonic() - started < 1.0

    asyncio.run(main())
