"""Deleting a queue ends its live flow jobs as cancelled ("queue deleted"), so
parents on other queues hear from their children, chains end, and a deleted
parent's children are cancelled; nothing of the queue is left behind but what
docs/design.md lists. Workers run in threads; the cluster's in tests/cluster.
Also: hops of poisoned and cancelled-by-payload jobs leave at once, and
get_flow reads its jobs in pinned groups."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

import worqr
from tests.support.waiting import wait_until
from worqr._core import scripts
from worqr._jobs import APPLIED_TTL_MS

from .conftest import Running, fast_worker

Make = Callable[..., worqr.Worqr]


def ended(wq: worqr.Worqr, flow_id: str, timeout: float = 15.0) -> worqr.FlowInfo:
    wait_until(lambda: wq.get_flow(flow_id).state != "running", timeout, message="flow ended")
    return wq.get_flow(flow_id)


def queue_keys(raw: redis.Redis, wq: worqr.Worqr, queue: str) -> dict[str, int]:
    """Every key left under the queue's hash tag, with its TTL (ms, -1: none)."""
    tag = wq._core.state.queue_keys(queue).tasks.split("}")[0] + "}"
    return {key.decode(): raw.pttl(key) for key in raw.keys(tag.replace("[", "\\[") + "*")}


@pytest.mark.parametrize("policy", ["fail", "ignore", "continue"])
def test_a_child_whose_queue_is_deleted_reports_under_each_policy(
    policy: str, running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)
    seen: list[tuple[dict[str, str | bytes | None], list[str]]] = []

    @worker.job("kid")
    def kid(payload: str) -> str:
        return f"ok {payload}"

    @worker.job("top")
    def top(payload: str) -> str:
        job = worqr.current_job()
        seen.append((job.children(), [c.state for c in job.child_outcomes()]))
        return "top done"

    running.start(worker)
    children = [worqr.FlowJob("kid", "a"), worqr.FlowJob("gone", "b")]  # nobody works "gone"
    flow = wq.submit_flow(worqr.FlowJob("top", "t", children=children, on_child_failure=policy))
    wait_until(lambda: wq.get_job("kid", f"{flow.id}.0").state == "finished", 10)
    assert wq.get_job("top", flow.id).state == "waiting"
    wq.delete_queue("gone")
    if policy == "fail":
        with pytest.raises(worqr.JobFailedError, match=r"ChildFailed: .* cancelled: QueueDeleted"):
            wq.result("top", flow.id, timeout=10)
        assert ended(wq, flow.id).state == "failed"
        assert seen == []
        return
    assert wq.result("top", flow.id, timeout=10) == "top done"
    results, states = seen[0]
    assert states == ["finished", "cancelled"]
    if policy == "ignore":
        assert results == {f"{flow.id}.0": "ok a"}
    else:
        assert results == {f"{flow.id}.0": "ok a", f"{flow.id}.1": None}
    assert ended(wq, flow.id).state == "finished"


def test_a_chain_whose_pending_step_is_deleted_ends_cancelled(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)

    @worker.job("first")
    def first(payload: str) -> str:
        return payload + "!"

    running.start(worker)
    flow = wq.submit_chain([worqr.Step("first", "x"), worqr.Step("second"), worqr.Step("third")])
    wait_until(lambda: wq.get_job("second", f"{flow.id}.1") is not None, 10)
    wq.delete_queue("second")
    info = ended(wq, flow.id, timeout=5)
    assert info.state == "cancelled"
    assert [(job.queue, job.state) for job in info.jobs] == [("first", "finished")]
    assert wq.relay() == 0
    assert wq.get_job("third", f"{flow.id}.2") is None  # never created


def test_a_waiting_parent_whose_queue_is_deleted_cancels_its_children(
    wq: worqr.Worqr, redis_url: str
) -> None:
    # No worker: the children stay queued, the parent waits.
    flow = wq.submit_flow(
        worqr.FlowJob("parent", children=[worqr.FlowJob("child", str(i)) for i in range(5)])
    )
    inner = wq.submit_flow(  # a parent there whose own child waits on "parent" too
        worqr.FlowJob("child", children=[worqr.FlowJob("parent", "leaf")])
    )
    assert wq.count_jobs("child")["queued"] == 5
    wq.delete_queue("parent")
    # Each child of the deleted parent is cancelled, through its outbox, at once.
    assert wq.count_jobs("child")["cancelled"] == 5
    info = wq.get_flow(flow.id)
    assert info.state == "cancelled"
    assert Counter(job.state for job in info.jobs) == {"cancelled": 5}
    # A parent on another queue heard from its deleted child (policy "fail").
    assert wq.get_job("child", inner.id).state == "failed"
    assert "QueueDeleted" in (wq.get_job("child", inner.id).error or "")
    assert wq.get_flow(inner.id).state == "failed"
    with redis.Redis.from_url(redis_url) as raw:
        left = queue_keys(raw, wq, "parent")
    applied = wq._core.state.queue_keys("parent").job_applied
    assert set(left) <= {applied}, left  # outbox relayed, flow keys gone
    assert all(0 < ttl <= APPLIED_TTL_MS for ttl in left.values())


def test_deleting_a_queue_with_many_flow_jobs_works_in_chunks_and_leaves_nothing(
    wq: worqr.Worqr, redis_url: str
) -> None:
    flow = wq.submit_flow(
        worqr.FlowJob("top", children=[worqr.FlowJob("many", str(i)) for i in range(450)])
    )
    wq.submit("many", "not a flow job")
    wq.delete_queue("many")
    with pytest.raises(worqr.JobFailedError, match="QueueDeleted"):
        wq.result("top", flow.id, timeout=5)
    assert wq.get_flow(flow.id).state == "failed"
    with redis.Redis.from_url(redis_url) as raw:
        assert set(queue_keys(raw, wq, "many")) <= {wq._core.state.queue_keys("many").job_applied}
        assert raw.zcard(wq._core.state.queue_keys("top").job_outbox) == 0


def test_the_delete_script_refuses_while_a_flow_job_is_live(wq: worqr.Worqr) -> None:
    """A relay that creates a flow job after the plan ended the others: the
    script refuses (nothing deleted) and the plan ends that one too."""
    flow = wq.submit_flow(worqr.FlowJob("top", children=[worqr.FlowJob("late", "x")]))
    keys = wq._core.state.queue_keys("late")

    def plan() -> Iterator[Any]:
        return (yield scripts.delete_queue(keys, [], publish="PUBLISH", applied_ttl_ms=1000))

    assert wq._drive(plan()) == -1
    assert wq.get_job("late", f"{flow.id}.0").state == "queued"  # untouched
    wq.delete_queue("late")
    assert wq.get_job("late", f"{flow.id}.0") is None
    assert wq.get_job("top", flow.id).state == "failed"


def test_a_hop_into_a_queue_being_deleted_is_ended_with_it(make: Make) -> None:
    """The race: a relay creates a flow job on the queue after the plan's sweep,
    before its delete script. The script refuses; the plan sweeps again."""
    wq, other = make(), make()
    first = wq.submit_flow(worqr.FlowJob("keep", children=[worqr.FlowJob("race", "1")]))
    original = wq._core.deletion._end_flow_jobs
    late: list[str] = []

    def sweep_then_race(queue: str, publish: str) -> Iterator[Any]:
        yield from original(queue, publish)
        if not late:  # another client's relay lands now
            flow = other.submit_flow(worqr.FlowJob("keep", children=[worqr.FlowJob("race", "2")]))
            late.append(flow.id)

    wq._core.deletion._end_flow_jobs = sweep_then_race  # type: ignore[method-assign]
    wq.delete_queue("race")
    assert len(late) == 1
    for flow_id in (first.id, late[0]):
        assert wq.get_job("keep", flow_id).state == "failed"
        assert wq.get_job("race", f"{flow_id}.0") is None


# -- hops of poisoned and cancelled-by-payload jobs go out at once ------------------

SLOW_RELAY = worqr.JobSettings(relay_lease=60.0)  # a straggler relay would take a minute


@pytest.mark.serial
def test_a_poisoned_childs_report_is_relayed_by_the_reaper_at_once(
    make: Make, redis_url: str
) -> None:
    producer = make(jobs=SLOW_RELAY)
    victim = make(start=True, jobs=SLOW_RELAY)
    producer.configure_queue("kid", max_recoveries=0)
    flow = producer.submit_flow(worqr.FlowJob("top", children=[worqr.FlowJob("kid", "x")]))
    victim.internals.mark_job_queue("kid")
    _, [_taken], _ = victim.internals.take_jobs("kid", [], 1)
    with redis.Redis.from_url(redis_url) as raw:  # the victim dies: its lease goes
        raw.delete(victim._core.state.mesh.alive(victim.worker_id or ""))
    assert producer.reap() == 1
    reaped = time.monotonic()
    assert producer.get_job("kid", f"{flow.id}.0").state == "failed"
    wait_until(lambda: producer.get_job("top", flow.id).state == "failed", 2)
    assert time.monotonic() - reaped < 2  # not after the relay lease (60 s)
    assert "WorkerLost" in (producer.get_job("top", flow.id).error or "")


def test_a_child_cancelled_by_payload_reports_at_once(make: Make) -> None:
    producer = make(jobs=SLOW_RELAY)
    flow = producer.submit_flow(
        worqr.FlowJob("top", children=[worqr.FlowJob("kid", "drop me")], on_child_failure="ignore")
    )
    assert producer.cancel_tasks("kid", "drop me") == 1
    # The parent heard at once (no relay lease): its last child ended, it is queued.
    assert producer.get_job("top", flow.id).state == "queued"


def test_get_flow_reads_a_thousand_children_in_a_few_round_trips(make: Make) -> None:
    wq = make()
    flow = wq.submit_flow(
        worqr.FlowJob("top", children=[worqr.FlowJob(f"kids-{i % 2}", str(i)) for i in range(1000)])
    )
    sent: list[Any] = []
    execute_once = wq._executor._execute_once

    def counting(request: Any) -> Any:
        sent.append(request)
        return execute_once(request)

    wq._executor._execute_once = counting  # type: ignore[method-assign]
    info = wq.get_flow(flow.id)
    assert len(info.jobs) == 1001 and info.state == "running"
    assert [job.id for job in info.jobs] == [flow.id] + [f"{flow.id}.{i}" for i in range(1000)]
    # The index entry, then per queue one read and one pinned group of the rest.
    assert len(sent) <= 8, [getattr(r, "script", r) for r in sent]
