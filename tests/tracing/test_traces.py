"""Traces of jobs across real `worqr worker` processes: the OpenTelemetry SDK of
each worker (tests/tracing/tracing_app.py) and of the test process exports
spans to files, which the tests read back. A job's life is one trace: its
submit's PRODUCER span and, as its children, a CONSUMER span per run."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from opentelemetry import trace

import worqr
from tests.support.job_mesh import Mesh
from tests.support.waiting import wait_until
from tests.tracing.spans import Span, raw_text, read_spans

pytestmark = pytest.mark.slow

SECRET = "payload-7f3c9e-never-exported"


def spans_of(directory: Path, count: int, **where: str) -> list[Span]:
    """The spans matching ``where`` (name, kind), once there are ``count``."""

    def found() -> list[Span]:
        return [
            s for s in read_spans(directory) if all(getattr(s, k) == v for k, v in where.items())
        ]

    wait_until(lambda: len(found()) >= count, timeout=15, message=f"{count} spans {where}")
    return found()


def test_a_job_that_fails_once_is_one_trace_of_its_submit_and_two_runs(
    mesh: Mesh, spans_dir: Path
) -> None:
    mesh.start(processes=1)
    with trace.get_tracer("test").start_as_current_span("request") as request:
        ref = mesh.client.submit("flaky", SECRET)
    assert mesh.client.result("flaky", ref.id, timeout=15) == "done"

    [send] = spans_of(spans_dir, 1, kind="PRODUCER")
    assert send.name == "send flaky"
    assert send.parent_id == f"{request.get_span_context().span_id:016x}"
    assert send.attributes == {
        "messaging.system": "worqr",
        "messaging.destination.name": "flaky",
        "messaging.operation.type": "send",
        "messaging.operation.name": "submit",
        "messaging.message.id": ref.id,
    }
    runs = sorted(
        spans_of(spans_dir, 2, kind="CONSUMER"), key=lambda s: s.attributes["worqr.job.attempt"]
    )
    assert len(runs) == 2
    for attempt, run in enumerate(runs, start=1):
        assert run.name == "process flaky"
        assert (run.trace_id, run.parent_id) == (send.trace_id, send.span_id)
        assert run.pid != os.getpid()  # a worker's span, exported by the worker
        assert run.attributes["messaging.system"] == "worqr"
        assert run.attributes["messaging.destination.name"] == "flaky"
        assert run.attributes["messaging.message.id"] == ref.id
        assert run.attributes["worqr.job.attempt"] == attempt
    failed, finished = runs
    assert failed.attributes["error.type"] == "ValueError"
    assert (failed.status, failed.attributes["worqr.job.outcome"]) == ("ERROR", "retried")
    assert "error.type" not in finished.attributes
    assert (finished.status, finished.attributes["worqr.job.outcome"]) == ("UNSET", "finished")
    exported = raw_text(spans_dir)
    assert SECRET not in exported and "not yet" not in exported  # no payload, no message


@pytest.mark.parametrize("queue", ["nested", "nested_sync"])
def test_the_handlers_own_spans_nest_under_its_run(mesh: Mesh, spans_dir: Path, queue: str) -> None:
    mesh.start(processes=1)
    ref = mesh.client.submit(queue, "x")
    assert mesh.client.result(queue, ref.id, timeout=15) == "nested"
    [run] = spans_of(spans_dir, 1, kind="CONSUMER")
    [inside] = spans_of(spans_dir, 1, name="inside")
    assert (inside.trace_id, inside.parent_id) == (run.trace_id, run.span_id)


def test_a_run_after_its_worker_was_killed_is_in_the_trace_and_says_recovered(
    mesh: Mesh, spans_dir: Path, prefix: str
) -> None:
    mesh.start(processes=2)
    workers = {int(mesh.client.get_worker_info(w)["pid"]): w for w in mesh.client.get_workers()}
    ref = mesh.client.submit("held", SECRET)
    wait_until(lambda: mesh.events("started", ref.id), message="the first start")
    [(victim, _)] = mesh.events("started", ref.id)
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: len(mesh.events("started", ref.id)) == 2, timeout=15, message="a peer")
    mesh.redis.set(f"{prefix}:release", 1)
    assert mesh.client.result("held", ref.id, timeout=15) == "released"

    [send] = spans_of(spans_dir, 1, kind="PRODUCER")
    [run] = spans_of(spans_dir, 1, kind="CONSUMER")  # the killed run's span never ended
    assert (run.trace_id, run.parent_id) == (send.trace_id, send.span_id)
    assert run.pid != victim and run.attributes["worqr.job.attempt"] == 2
    [recovered] = [event for event in run.events if event["name"] == "worqr.recovered"]
    assert recovered["attributes"] == {"worqr.worker.id": workers[victim]}
    assert SECRET not in raw_text(spans_dir)


def test_a_flows_steps_and_children_run_in_its_submits_trace(mesh: Mesh, spans_dir: Path) -> None:
    mesh.start(processes=2)
    chain = mesh.client.submit_chain([worqr.Step("step", "a"), worqr.Step("step")])
    tree = mesh.client.submit_flow(
        worqr.FlowJob(
            "step", "root", children=[worqr.FlowJob("step", "c0"), worqr.FlowJob("step", "c1")]
        )
    )
    last = chain.jobs[-1][1]  # created once the first step finished
    wait_until(lambda: mesh.client.get_job("step", last) is not None, message="the last step")
    assert mesh.client.result("step", last, timeout=15) == "a++"
    assert mesh.client.result("step", tree.jobs[0][1], timeout=15) == "root+"

    sends = spans_of(spans_dir, 2, kind="PRODUCER")
    runs = spans_of(spans_dir, 5, kind="CONSUMER")
    by_job = {run.attributes["messaging.message.id"]: run for run in runs}
    for flow, operation in ((chain, "submit_chain"), (tree, "submit_flow")):
        [send] = [s for s in sends if s.attributes["messaging.operation.name"] == operation]
        assert send.attributes["messaging.message.id"] == flow.jobs[0][1]
        for _, job_id in flow.jobs:
            run = by_job[job_id]
            assert (run.trace_id, run.parent_id) == (send.trace_id, send.span_id)
    assert len({s.trace_id for s in sends}) == 2  # each submit: a trace of its own


def test_each_fire_of_a_schedule_starts_a_trace_of_its_own(mesh: Mesh, spans_dir: Path) -> None:
    mesh.start(processes=1)
    with trace.get_tracer("test").start_as_current_span("request") as request:
        mesh.client.schedule("step", "tick", every=0.2, payload="t")
    runs = spans_of(spans_dir, 2, kind="CONSUMER")
    assert all(run.parent_id is None for run in runs)  # roots, not the request's
    assert len({run.trace_id for run in runs}) == len(runs)
    assert f"{request.get_span_context().trace_id:032x}" not in {run.trace_id for run in runs}
    assert all(run.attributes["messaging.message.id"].startswith("cron:tick:") for run in runs)
    mesh.client.unschedule("step", "tick")


def test_runs_rate_limited_or_cancelled_say_so_in_an_event(mesh: Mesh, spans_dir: Path) -> None:
    mesh.start(processes=1)
    limited = mesh.client.submit("limited", SECRET)
    assert mesh.client.result("limited", limited.id, timeout=15) == "limited"
    held = mesh.client.submit("held", SECRET)
    wait_until(lambda: mesh.events("started", held.id), message="the held job's start")
    assert mesh.client.cancel_job("held", held.id)
    runs = spans_of(spans_dir, 3, kind="CONSUMER")
    outcomes = {
        (run.name, run.attributes["worqr.job.outcome"]): (
            [e["name"] for e in run.events],
            run.status,
        )
        for run in runs
    }
    assert outcomes == {
        ("process limited", "rate_limited"): (["worqr.rate_limited"], "UNSET"),
        ("process limited", "finished"): ([], "UNSET"),
        ("process held", "cancelled"): (["worqr.cancelled"], "UNSET"),
    }
    assert SECRET not in raw_text(spans_dir)
