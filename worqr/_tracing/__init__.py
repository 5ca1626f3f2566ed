"""The seams tracing needs in worqr's core and runtime, which never import
OpenTelemetry themselves (``worqr.tracing`` and ``_tracing.otel`` do).

Whether the ``opentelemetry`` API is importable is checked once, at the first
submit. Without it a submit carries no trace context (only one a `worqr http`
request brought: `incoming`), and a run's handler sees no span.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Generator, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Sending(Protocol):
    """A submit's PRODUCER span (or the context it only carries along)."""

    carrier: dict[str, str]
    """The trace context for the job's record: ``tp`` traceparent, ``ts`` tracestate."""

    def name(self, ids: list[str]) -> None:
        """The ids of the jobs it submits (known once they are drawn)."""

    def end(self, error: BaseException | None) -> None:
        """The submit returned (``error`` None) or raised ``error``."""


class Api(Protocol):
    def send(self, queue: str, operation: str) -> Sending: ...

    def continued(self, headers: Mapping[str, str]) -> AbstractContextManager[object]: ...

    def attach(self, otel_context: object) -> None: ...


_UNSET: Any = object()
_api: Api | None = _UNSET

RUNS: dict[str, object] = {}
"""Process id -> the OpenTelemetry context of its run's span, from the run's
start to its end (`worqr.tracing.TracingHooks` keeps it): the runtime makes it
current where the handler runs (`enter_run`). Empty while nothing is traced."""

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
_incoming: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "worqr_incoming_trace", default=None
)


def api() -> Api | None:
    """OpenTelemetry's side, or None when the API is not installed (checked once)."""
    global _api
    if _api is _UNSET:
        try:
            from . import otel
        except ImportError:
            _api = None
        else:
            _api = otel.OTEL
    return _api


def enter_run(context: contextvars.Context, pid: str) -> None:
    """Make the span of run ``pid`` current in ``context``, the one its handler
    runs in (so the handler's own spans nest under it); a dict check when off."""
    if RUNS:
        otel_context = RUNS.get(pid)
        if otel_context is not None:
            otel = api()
            assert otel is not None
            context.run(otel.attach, otel_context)


def traced(queue: str, operation: str) -> Sending | None:
    """The span of a submit to ``queue`` (``operation``: submit, submit_many,
    submit_chain, submit_flow), or None when there is nothing to carry."""
    otel = api()
    if otel is not None:
        return otel.send(queue, operation)
    carried = _incoming.get()
    return None if carried is None else _Carried(carried)


def around(sending: Sending | None, plan: Generator[Any, Any, T]) -> Generator[Any, Any, T]:
    """Run ``plan``, then end ``sending`` with how it went."""
    if sending is None:
        return (yield from plan)
    try:
        result = yield from plan
    except BaseException as error:
        sending.end(error)
        raise
    sending.end(None)
    return result


def continued(headers: Mapping[str, str]) -> AbstractContextManager[object]:
    """While it is entered, submits continue the W3C trace context of an HTTP
    request's ``headers`` (`worqr http`): as the parent of their PRODUCER span
    with the API installed, else carried to the job's record as it came."""
    parent = headers.get("traceparent")
    if parent is None:
        return nullcontext()
    otel = api()
    if otel is not None:
        return otel.continued(headers)
    if not _TRACEPARENT.match(parent.strip()):
        return nullcontext()
    carrier = {"tp": parent.strip()}
    state = headers.get("tracestate")
    if state:
        carrier["ts"] = state.strip()
    return _Incoming(carrier)


class _Carried:
    """What a submit without the API carries: a request's trace context."""

    def __init__(self, carrier: dict[str, str]) -> None:
        self.carrier = carrier

    def name(self, ids: list[str]) -> None:
        pass

    def end(self, error: BaseException | None) -> None:
        pass


class _Incoming:
    def __init__(self, carrier: dict[str, str]) -> None:
        self.carrier = carrier
        self.token: contextvars.Token[dict[str, str] | None] | None = None

    def __enter__(self) -> None:
        self.token = _incoming.set(self.carrier)

    def __exit__(self, *_: object) -> None:
        assert self.token is not None
        _incoming.reset(self.token)
