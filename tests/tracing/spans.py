"""Spans as the tracing tests read them: an OpenTelemetry SDK exporter that
writes each finished span as one JSON line to ``<directory>/spans-<pid>.jsonl``
(one file per process: workers of one `--processes N` never interleave), and
`read_spans` that reads a directory's files back."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class FileExporter(SpanExporter):
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        path = self.directory / f"spans-{os.getpid()}.jsonl"
        with open(path, "a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps(json.loads(span.to_json()), separators=(",", ":")) + "\n")
        return SpanExportResult.SUCCESS


def configure(directory: str | Path) -> None:
    """The process's global tracer provider, exporting every span at its end."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileExporter(directory)))
    trace.set_tracer_provider(provider)


@dataclass(frozen=True)
class Span:
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: dict[str, Any]
    status: str
    trace_state: str
    events: list[dict[str, Any]]
    pid: int


def read_spans(directory: Path) -> list[Span]:
    spans = []
    for path in sorted(directory.glob("spans-*.jsonl")):
        pid = int(path.stem.split("-")[1])
        for line in path.read_text(encoding="utf-8").splitlines():
            raw = json.loads(line)
            spans.append(
                Span(
                    name=raw["name"],
                    kind=raw["kind"].removeprefix("SpanKind."),
                    trace_id=raw["context"]["trace_id"].removeprefix("0x"),
                    span_id=raw["context"]["span_id"].removeprefix("0x"),
                    parent_id=raw["parent_id"] and raw["parent_id"].removeprefix("0x"),
                    attributes=raw["attributes"],
                    status=raw["status"]["status_code"],
                    trace_state=raw["context"]["trace_state"],
                    events=raw["events"],
                    pid=pid,
                )
            )
    return spans


def raw_text(directory: Path) -> str:
    """Everything exported, as text (no payload may be in it)."""
    return "".join(path.read_text(encoding="utf-8") for path in directory.glob("spans-*.jsonl"))
