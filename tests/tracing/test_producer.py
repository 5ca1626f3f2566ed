"""The producer's side alone: a submit's PRODUCER span and what it carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

import worqr
from tests.tracing.spans import read_spans
from worqr._keys import QueueKeys


@pytest.fixture
def wq(redis_url: str, prefix: str) -> worqr.Worqr:
    with worqr.Worqr(redis_url, prefix=prefix) as client:
        yield client


def records(redis_client: redis.Redis, prefix: str, queue: str) -> list[dict[str, object]]:
    """The JSON fields of the queue's job records."""
    raw = redis_client.hgetall(QueueKeys(f"{{{prefix}:{queue}}}").jobs)
    return [json.loads(value) for field, value in raw.items() if not field.endswith(b"\x01")]


def test_submit_many_is_one_span_whose_context_every_job_carries(
    wq: worqr.Worqr, spans_dir: Path, redis_client: redis.Redis, prefix: str
) -> None:
    refs = wq.submit_many("batch", ["a", "b", "c"])
    [send] = read_spans(spans_dir)
    assert (send.name, send.kind, send.parent_id) == ("send batch", "PRODUCER", None)
    assert send.attributes["messaging.operation.name"] == "submit_many"
    assert send.attributes["messaging.batch.message_count"] == 3
    assert "messaging.message.id" not in send.attributes  # no single id
    carried = [str(record["tp"])[:-3] for record in records(redis_client, prefix, "batch")]
    assert carried == [f"00-{send.trace_id}-{send.span_id}"] * len(refs)  # flags aside


def test_a_submit_that_raises_ends_its_span_in_error(wq: worqr.Worqr, spans_dir: Path) -> None:
    wq.enqueue("tasks", "x")
    with pytest.raises(worqr.WrongQueueKindError):
        wq.submit("tasks", "x")
    [send] = read_spans(spans_dir)
    assert send.status == "ERROR"
    assert send.attributes["error.type"].endswith("WrongQueueKindError")


def test_bad_input_raises_before_any_span(wq: worqr.Worqr, spans_dir: Path) -> None:
    with pytest.raises(ValueError):
        wq.submit("q", "x", priority=10**9)
    assert read_spans(spans_dir) == []
