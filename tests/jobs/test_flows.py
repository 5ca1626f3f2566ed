"""Flows: chains of steps across queues, parents fanning out to children and in
again under each failure policy, cancel_flow, and hops that survive a relay's
death (applied exactly once). Workers run in threads here; real `worqr worker`
processes in test_flow_processes.py, a 3-master cluster in tests/cluster."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest
import redis

import worqr
from tests.support.waiting import wait_until

from .conftest import Running, fast_worker

Make = Callable[..., worqr.Worqr]


def flow_state(wq: worqr.Worqr, flow_id: str) -> str:
    return wq.get_flow(flow_id).state


def ended(wq: worqr.Worqr, flow_id: str, timeout: float = 15.0) -> worqr.FlowInfo:
    wait_until(
        lambda: flow_state(wq, flow_id) != "running", timeout, message=f"flow {flow_id} ended"
    )
    return wq.get_flow(flow_id)


def test_a_chain_passes_each_result_to_the_next_step_across_queues(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    seen: list[tuple[str, str]] = []
    worker = fast_worker(redis_url, prefix)

    @worker.job("fetch")
    def fetch(payload: str) -> str:
        seen.append(("fetch", payload))
        return f"page of {payload}"

    @worker.job("parse")
    def parse(payload: str) -> bytes:
        seen.append(("parse", payload))
        return payload.upper().encode()

    @worker.job("store")
    def store(payload: str) -> str:
        seen.append(("store", payload))
        return f"stored {payload}"

    running.start(worker)
    flow = wq.submit_chain(
        [worqr.Step("fetch", "https://x"), worqr.Step("parse"), worqr.Step("store")]
    )
    assert flow.kind == "chain"
    assert flow.jobs == (
        ("fetch", f"{flow.id}.0"),
        ("parse", f"{flow.id}.1"),
        ("store", f"{flow.id}.2"),
    )
    ended(wq, flow.id)  # the last step exists once the one before finished
    assert wq.result("store", f"{flow.id}.2", timeout=0) == "stored PAGE OF HTTPS://X"
    assert seen == [
        ("fetch", "https://x"),
        ("parse", "page of https://x"),
        ("store", "PAGE OF HTTPS://X"),
    ]
    info = wq.get_flow(flow.id)
    assert info.state == "finished"
    assert [(job.queue, job.state) for job in info.jobs] == [
        ("fetch", "finished"),
        ("parse", "finished"),
        ("store", "finished"),
    ]


def test_a_step_with_its_own_payload_ignores_the_result_and_a_failed_step_fails_the_chain(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)
    ran: Counter[str] = Counter()

    @worker.job("a")
    def a(payload: str) -> str:
        ran["a"] += 1
        return "from a"

    @worker.job("b", retries=1, backoff=0.01)
    def b(payload: str) -> str:
        ran[f"b:{payload}"] += 1
        raise RuntimeError("b breaks")

    @worker.job("c")
    def c(payload: str) -> str:
        ran["c"] += 1
        return payload

    running.start(worker)
    flow = wq.submit_chain([worqr.Step("a"), worqr.Step("b", "own"), worqr.Step("c")])
    info = ended(wq, flow.id)
    assert info.state == "failed"
    assert ran == {"a": 1, "b:own": 2}  # its own payload; retried once; c never created
    assert [job.id for job in info.jobs] == [f"{flow.id}.0", f"{flow.id}.1"]
    assert wq.get_job("c", f"{flow.id}.2") is None


def test_a_fan_out_of_100_children_fans_in_once_with_every_result(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix, concurrency=8)
    parents: list[dict[str, str | bytes | None]] = []

    @worker.job("part")
    def part(payload: str) -> str:
        return f"part {payload} done"

    @worker.job("report")
    def report(payload: str) -> str:
        children = worqr.current_job().children()
        parents.append(children)
        return f"{payload}: {len(children)} parts"

    running.start(worker)
    flow = wq.submit_flow(
        worqr.FlowJob("report", "q3", children=[worqr.FlowJob("part", str(i)) for i in range(100)])
    )
    assert wq.result("report", flow.id, timeout=30) == "q3: 100 parts"
    assert len(parents) == 1
    assert parents[0] == {f"{flow.id}.{i}": f"part {i} done" for i in range(100)}
    assert list(parents[0]) == [f"{flow.id}.{i}" for i in range(100)]  # submit order
    info = wq.get_flow(flow.id)
    assert info.state == "finished" and len(info.jobs) == 101
    assert wq.count_jobs("report")["finished"] == 1


@pytest.mark.parametrize("policy", ["fail", "ignore", "continue"])
def test_a_failed_child_under_each_policy(
    policy: str, running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)
    seen: list[tuple[dict[str, str | bytes | None], list[str]]] = []
    release = threading.Event()

    @worker.job("kid", retries=0)
    def kid(payload: str) -> str:
        if payload == "bad":
            raise worqr.Fail("no good")
        if payload == "slow":
            release.wait(10)
        return f"ok {payload}"

    @worker.job("top")
    def top(payload: str) -> str:
        job = worqr.current_job()
        seen.append((job.children(), [c.state for c in job.child_outcomes()]))
        return "top done"

    running.start(worker)
    children = [
        worqr.FlowJob("kid", "good"),
        worqr.FlowJob("kid", "bad"),
        worqr.FlowJob("kid", "slow"),
    ]
    flow = wq.submit_flow(worqr.FlowJob("top", "t", children=children, on_child_failure=policy))
    root, good, bad, slow = flow.id, f"{flow.id}.0", f"{flow.id}.1", f"{flow.id}.2"
    if policy == "fail":
        with pytest.raises(
            worqr.JobFailedError, match=r"ChildFailed: child kid/.*\.1 failed: Fail: no good"
        ):
            wq.result("top", root, timeout=15)
        # The slow child still running is cancelled, through the outbox.
        wait_until(lambda: wq.get_job("kid", slow).state == "cancelled", 10)
        release.set()
        assert seen == []
        assert ended(wq, root).state == "failed"
        return
    wait_until(lambda: wq.get_job("kid", bad).state == "failed", 10)
    assert wq.get_job("top", root).state == "waiting"  # the slow child holds it
    release.set()
    assert wq.result("top", root, timeout=15) == "top done"
    results, states = seen[0]
    assert states == ["finished", "failed", "finished"]
    if policy == "ignore":
        assert results == {good: "ok good", slow: "ok slow"}
    else:
        assert results == {good: "ok good", bad: None, slow: "ok slow"}
    assert wq.get_flow(root).state == "finished"


def test_cancel_flow_cancels_running_and_pending_steps(
    running: Running, wq: worqr.Worqr, redis_url: str, prefix: str
) -> None:
    worker = fast_worker(redis_url, prefix)
    started = threading.Event()
    ran: Counter[str] = Counter()

    @worker.job("one")
    def one(payload: str) -> str:
        ran["one"] += 1
        started.set()
        worqr.current_job().cancelled.wait(10)
        return "late"

    @worker.job("two")
    def two(payload: str) -> str:
        ran["two"] += 1
        return payload

    running.start(worker)
    flow = wq.submit_chain([worqr.Step("one", "x"), worqr.Step("two")])
    assert started.wait(10)
    assert wq.cancel_flow(flow.id) is True
    info = wq.get_flow(flow.id)
    assert info.state == "cancelled"
    assert [job.state for job in info.jobs] == ["cancelled"]
    assert wq.cancel_flow(flow.id) is False  # ended already
    # The step never created stays blocked, even if a late hop came.
    assert wq.relay() == 0
    assert wq.get_job("two", f"{flow.id}.1") is None and ran["two"] == 0


def test_cancel_flow_cancels_a_waiting_parent_and_its_children(
    running: Running, wq: worqr.Worqr
) -> None:
    # No worker: every child stays queued, the parent waits.
    flow = wq.submit_flow(
        worqr.FlowJob("parent", children=[worqr.FlowJob("child", str(i)) for i in range(5)])
    )
    assert wq.get_job("parent", flow.id).state == "waiting"
    assert wq.count_jobs("child")["queued"] == 5
    assert wq.cancel_flow(flow.id) is True
    info = wq.get_flow(flow.id)
    assert info.state == "cancelled"
    assert Counter(job.state for job in info.jobs) == {"cancelled": 6}
    assert wq.count_jobs("parent") == wq.count_jobs("parent") | {"cancelled": 1, "waiting": 0}


def test_bad_input_raises_and_writes_nothing(wq: worqr.Worqr) -> None:
    with pytest.raises(ValueError, match="at least one step"):
        wq.submit_chain([])
    with pytest.raises(TypeError):
        wq.submit_chain([worqr.Step("a"), "b"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="hash tags"):
        worqr.Step("bad{name}")
    with pytest.raises(TypeError, match="unexpected keyword"):
        wq.submit_chain([worqr.Step("a", colour="red")])
    with pytest.raises(ValueError, match="retries"):
        wq.submit_chain([worqr.Step("a"), worqr.Step("b", retries=-1)])
    with pytest.raises(TypeError, match="own ids"):
        worqr.Step("a", unique=True)
    with pytest.raises(ValueError, match="on_child_failure"):
        worqr.FlowJob("a", on_child_failure="maybe")  # type: ignore[arg-type]
    looped = worqr.FlowJob("a")
    looped.children = (worqr.FlowJob("b", children=[looped]),)
    with pytest.raises(ValueError, match="cycle"):
        wq.submit_flow(looped)
    assert wq.relay() == 0
    with pytest.raises(worqr.JobNotFoundError):
        wq.get_flow("nothing")
    assert wq.cancel_flow("nothing") is False
    for queue in ("a", "b"):
        assert wq._queue_kind(queue) == "tasks"  # never made a job queue


def test_a_hop_relayed_twice_is_applied_once(make: Make, redis_url: str) -> None:
    """The finishing worker dies before relaying (its relay is skipped here); a
    straggler relay applies the hop; the same hop relayed again (a relay that
    died before its ack) creates nothing, even once the step was purged."""
    jobs = worqr.JobSettings(relay_lease=0.2, result_ttl=0, min_retention=0)
    producer, worker = make(jobs=jobs), make(start=True, jobs=jobs)

    def no_relay(queue: str, flat: object) -> object:
        return iter(())

    worker._core.relay_written = no_relay  # type: ignore[method-assign]
    flow = producer.submit_chain([worqr.Step("h1", "x"), worqr.Step("h2")])
    worker._mark_job_queue("h1")
    _, [step], _ = worker._take_jobs("h1", [], 1)
    assert worker._take_jobs("h1", [(step, "s", b"result")], 0)[0] == [True]
    outbox = producer._core.queue_keys("h1")
    with redis.Redis.from_url(redis_url) as raw:
        [hop] = raw.zrange(outbox.job_outbox, 0, -1)
        header = raw.hget(outbox.job_outbox_data, hop)
        assert producer.get_job("h2", f"{flow.id}.1") is None
        assert producer.relay("h2") == 0  # nothing in h2's own outbox
        wait_until(lambda: producer._drive(producer._core.relay_stragglers()) == 1, 5)
        assert producer.get_job("h2", f"{flow.id}.1").payload == "result"
        assert raw.zcard(outbox.job_outbox) == 0  # acked
        # The same hop again (as if its ack had been lost), after the step was purged.
        worker._mark_job_queue("h2")
        _, [second], _ = worker._take_jobs("h2", [], 1)
        worker._take_jobs("h2", [(second, "n", b"")], 0)
        worker._promote_due("h2")  # purges
        assert producer.get_job("h2", f"{flow.id}.1") is None
        raw.zadd(outbox.job_outbox, {hop: 0})
        raw.hset(outbox.job_outbox_data, hop, header)
        raw.hset(outbox.job_outbox_body, hop, "result")
    assert producer.relay("h1") == 1
    assert producer.get_job("h2", f"{flow.id}.1") is None  # not created again
    assert producer.count_jobs("h2")["queued"] == 0
