"""Fixtures of the tracing tests: a directory the spans of every process of a
test are exported to (the test process's own provider points at it too), and
real `worqr worker` processes of tests/tracing/tracing_app.py exporting there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.job_mesh import Mesh
from tests.tracing.spans import FileExporter

APP = "tests.tracing.tracing_app:worker"


class _Switch(FileExporter):
    """The test process's exporter: a process sets its provider once, so each
    test points it at its own directory."""

    def __init__(self) -> None:
        super().__init__(".")


_PRODUCER = _Switch()
_configured = False


@pytest.fixture
def spans_dir(tmp_path: Path) -> Iterator[Path]:
    """This test's span directory; the test process's submits export there."""
    global _configured
    if not _configured:  # a process sets its provider once: add to one set before
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        provider.add_span_processor(SimpleSpanProcessor(_PRODUCER))
        _configured = True
    directory = tmp_path / "spans"
    directory.mkdir()
    _PRODUCER.directory = directory
    yield directory
    _PRODUCER.directory = tmp_path  # later spans of this process go nowhere we read


@pytest.fixture
def mesh(
    redis_url: str, prefix: str, tmp_path: Path, spans_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Mesh]:
    monkeypatch.setenv("TRACE_DIR", str(spans_dir))
    made = Mesh(redis_url, prefix, tmp_path / "worker.log", app=APP)
    try:
        yield made
    finally:
        made.close()
