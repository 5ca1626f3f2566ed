"""worqr's spans, on the OpenTelemetry API (imported only when it is installed).

Names and attributes follow the messaging semantic conventions: a PRODUCER span
``send <queue>`` per submit call, a CONSUMER span ``process <queue>`` per run of
a job's handler. The trace context travels in the job's record as W3C
``traceparent``/``tracestate`` (never in the payload).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from .._version import __version__

SYSTEM = "messaging.system"
DESTINATION = "messaging.destination.name"
MESSAGE_ID = "messaging.message.id"
OPERATION_TYPE = "messaging.operation.type"
OPERATION_NAME = "messaging.operation.name"
BATCH_COUNT = "messaging.batch.message_count"
ERROR_TYPE = "error.type"

W3C = TraceContextTextMapPropagator()
TRACER = trace.get_tracer("worqr", __version__)  # a proxy until the application sets a provider


def error_type(error: BaseException) -> str:
    """The exception's qualified name (builtins without their module)."""
    kind = type(error)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def failed(span: trace.Span, error: BaseException) -> None:
    """``error.type`` and status ERROR; no message (it may quote a payload)."""
    span.set_attribute(ERROR_TYPE, error_type(error))
    span.set_status(Status(StatusCode.ERROR))


def carrier_of(span: trace.Span) -> dict[str, str]:
    """The record's keys for ``span``'s context: ``tp`` and, when set, ``ts``."""
    span_context = span.get_span_context()
    if not span_context.is_valid:
        return {}
    headers: dict[str, str] = {}
    W3C.inject(headers, trace.set_span_in_context(span))
    carrier = {"tp": headers["traceparent"]}
    if headers.get("tracestate"):
        carrier["ts"] = headers["tracestate"]
    return carrier


ROOT = Context()  # no parent: a span started in it begins a trace


def parent_of(traceparent: str | None, tracestate: str | None) -> Context:
    """The context a run's span is a child of: its submit's, else none at all
    (a new trace: a schedule's fire, a job submitted without tracing). The
    record's ``traceparent`` is one worqr wrote (version 00), so it is split
    here rather than by the propagator, at a third of the cost per run."""
    if traceparent is None:
        return ROOT
    try:
        _, trace_id, span_id, flags = traceparent.split("-")
        parent = SpanContext(
            int(trace_id, 16),
            int(span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(int(flags, 16)),
            trace_state=TraceState.from_header([tracestate]) if tracestate else None,
        )
    except ValueError:
        return ROOT
    if not parent.is_valid:
        return ROOT
    return trace.set_span_in_context(trace.NonRecordingSpan(parent), ROOT)


class Recording:
    """Whether the application set a global tracer provider (an SDK's): without
    one a span is a no-op, and a worker skips making them. Asking OpenTelemetry
    costs microseconds (it reads the environment), so until a provider is set
    the answer is asked again at most every `RECHECK` seconds; once set, a
    provider stays."""

    RECHECK = 1.0

    def __init__(self) -> None:
        self.known = False
        self.next_check = 0.0

    def __call__(self) -> bool:
        if self.known:
            return True
        now = time.monotonic()
        if now < self.next_check:
            return False
        self.next_check = now + self.RECHECK
        provider = trace.get_tracer_provider()
        self.known = not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
        return self.known


recording = Recording()


class Send:
    """A submit's PRODUCER span, a child of the caller's current span."""

    __slots__ = ("carrier", "span")

    def __init__(self, queue: str, operation: str) -> None:
        attributes: dict[str, Any] = {
            SYSTEM: "worqr",
            DESTINATION: queue,
            OPERATION_TYPE: "send",
            OPERATION_NAME: operation,
        }
        self.span = TRACER.start_span(
            f"send {queue}", kind=SpanKind.PRODUCER, attributes=attributes
        )
        self.carrier = carrier_of(self.span)

    def name(self, ids: list[str]) -> None:
        # One job: its id. Several (submit_many): no single id, their count.
        if len(ids) == 1:
            self.span.set_attribute(MESSAGE_ID, ids[0])
        else:
            self.span.set_attribute(BATCH_COUNT, len(ids))

    def end(self, error: BaseException | None) -> None:
        if error is not None and self.span.is_recording():
            failed(self.span, error)
        self.span.end()


class Otel:
    """What `worqr._tracing` asks of OpenTelemetry."""

    def send(self, queue: str, operation: str) -> Send:
        return Send(queue, operation)

    @contextmanager
    def continued(self, headers: Mapping[str, str]) -> Iterator[object]:
        """The request's context, unless instrumentation made one current already
        (``opentelemetry-instrument`` continues the header itself)."""
        if trace.get_current_span().get_span_context().is_valid:
            yield None
            return
        token = otel_context.attach(W3C.extract(dict(headers)))
        try:
            yield None
        finally:
            otel_context.detach(token)

    def attach(self, context: object) -> None:
        # The handler's context is a copy made for this run alone: never detached.
        assert isinstance(context, Context)
        otel_context.attach(context)


OTEL = Otel()
