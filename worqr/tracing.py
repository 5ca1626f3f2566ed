"""OpenTelemetry tracing of jobs (``pip install 'worqr[otel]'``; docs/tracing.md).

Submits make their PRODUCER span whenever the API is installed (a no-op until
the application configures an SDK). A worker traces the runs of its jobs once
given a `TracingHooks`::

    worker = worqr.Worker(redis_url, hooks=[TracingHooks()])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from . import _tracing
from ._hooks import Hooks, JobRun
from ._tracing.otel import (
    DESTINATION,
    MESSAGE_ID,
    OPERATION_NAME,
    OPERATION_TYPE,
    SYSTEM,
    TRACER,
    failed,
    parent_of,
    recording,
)

__all__ = ["TracingHooks"]

ATTEMPT = "worqr.job.attempt"
OUTCOME = "worqr.job.outcome"
_EVENTS = {"cancelled": "worqr.cancelled", "rate_limited": "worqr.rate_limited"}


class TracingHooks(Hooks):
    """A CONSUMER span ``process <queue>`` per run of a job's handler, a child
    of its submit's PRODUCER span, current while the handler runs. On the span:
    ``messaging.system`` "worqr", ``messaging.destination.name`` the queue,
    ``messaging.message.id`` the job id, ``worqr.job.attempt`` (1-based),
    ``worqr.job.outcome`` (`worqr.JOB_RUN_OUTCOMES`); when the handler raised
    (retried or failed) ``error.type`` and status ERROR. Events:
    ``worqr.recovered`` (``worqr.worker.id``: the dead worker it follows),
    ``worqr.cancelled``, ``worqr.rate_limited``. Never a payload, result or
    error message.

    ``tracer_provider``: the provider to use (default: the global one, once the
    application set it: a provider set after the worker started is used within
    a second)."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None) -> None:
        self._recording: Callable[[], bool]
        if tracer_provider is None:
            self._tracer = TRACER
            self._recording = recording
        else:
            self._tracer = trace.get_tracer("worqr", tracer_provider=tracer_provider)
            self._recording = _always
        self._spans: dict[str, trace.Span] = {}

    def on_job_run_started(self, run: JobRun) -> None:
        if not self._recording():  # no SDK configured (yet): no span, no cost
            return
        attributes: dict[str, Any] = {
            SYSTEM: "worqr",
            DESTINATION: run.queue,
            OPERATION_TYPE: "process",
            OPERATION_NAME: "process",
            MESSAGE_ID: run.job_id,
            ATTEMPT: run.attempt,
        }
        span = self._tracer.start_span(
            f"process {run.queue}",
            context=parent_of(run.traceparent, run.tracestate),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
        )
        if run.lost_by is not None:
            span.add_event("worqr.recovered", {"worqr.worker.id": run.lost_by})
        self._spans[run.id] = span
        _tracing.RUNS[run.id] = trace.set_span_in_context(span)

    def on_job_run_ended(
        self, run: JobRun, outcome: str, seconds: float, error: BaseException | None
    ) -> None:
        if not self._spans:  # nothing traced (no SDK): no lookups
            return
        span = self._spans.pop(run.id, None)
        if span is None:
            return
        _tracing.RUNS.pop(run.id, None)
        span.set_attribute(OUTCOME, outcome)
        event = _EVENTS.get(outcome)
        if event is not None:
            span.add_event(event)
        elif error is not None:
            failed(span, error)
        span.end()


def _always() -> bool:
    return True
