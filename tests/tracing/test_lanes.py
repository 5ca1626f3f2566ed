"""A worker whose handlers are all sync runs them on lanes (worqr/_runtime/lanes.py):
there too each run's span is current while its handler runs. In process: the
test's own SDK exports the worker's spans."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace

import worqr
from tests.support.workers import Runner, worker_settings
from tests.tracing.test_traces import spans_of
from worqr.tracing import TracingHooks


@pytest.fixture
def runner() -> Iterator[Runner]:
    made = Runner()
    try:
        yield made
    finally:
        made.stop_all()


def test_a_lane_runs_its_handler_inside_the_runs_span(
    redis_url: str, prefix: str, spans_dir: Path, runner: Runner
) -> None:
    worker = worqr.Worker(redis_url, settings=worker_settings(prefix), hooks=[TracingHooks()])

    @worker.job("lane")
    def handle(payload: str) -> str:
        with trace.get_tracer("test").start_as_current_span("inside"):
            return payload

    runner.start(worker)
    assert worker._lanes is not None  # the path under test
    with worqr.Worqr(redis_url, prefix=prefix) as client:
        ref = client.submit("lane", "x")
        assert client.result("lane", ref.id, timeout=15) == "x"
    [send] = spans_of(spans_dir, 1, kind="PRODUCER")
    [run] = spans_of(spans_dir, 1, kind="CONSUMER")
    [inside] = spans_of(spans_dir, 1, name="inside")
    assert (run.trace_id, run.parent_id) == (send.trace_id, send.span_id)
    assert (inside.trace_id, inside.parent_id) == (run.trace_id, run.span_id)
