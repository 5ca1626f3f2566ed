"""A job's record as the scripts keep it (``lua/lib/jobs.lua``): a JSON field
``id`` and a hot field ``id + "\\x01"``, the few values a take and a plain finish
change, as one string, so that a worker's steady state never encodes JSON."""

from __future__ import annotations

import json
from typing import Any

HOT_SUFFIX = "\x01"  # job ids hold no control characters


def hot_field(id: str) -> str:
    return id + HOT_SUFFIX


def merge_record(raw: bytes | str, hot: bytes | str | None) -> dict[str, Any]:
    """The record as one dict: the JSON field's keys, then the hot ones
    (``s<life>|a|t|e|X|y|plain|p``; empty means absent, p is last)."""
    record: dict[str, Any] = json.loads(raw)
    if hot is None:
        return record
    text = hot.decode() if isinstance(hot, bytes) else hot
    head, attempts, started, ended, purge_at, result_type, _, pid = text.split("|", 7)
    record["s"], record["l"], record["a"] = head[0], int(head[1:]), int(attempts)
    for key, value in (("t", started), ("e", ended), ("X", purge_at)):
        if value:
            record[key] = int(value)
    if result_type:
        record["y"] = result_type
    if pid:
        record["p"] = pid
    return record
