"""A job queue's metrics history over HTTP (`Worqr.get_history`):
``GET /v1/queues/{queue}/history?since=SECONDS``."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import Response

from .._core.history import MAX_SINCE
from .._core.history_model import HistoryPoint, totals
from .config import client_of
from .operations import Answer, Operation, reply
from .replies import Reply
from .rules import STRICT, seconds

Seconds = Annotated[float | None, Field(description="seconds (the upper bound of its bucket)")]


class HistoryQuery(BaseModel):
    model_config = STRICT

    since: Annotated[
        float, seconds(above=True, high=MAX_SINCE), Field(description="seconds back (<= 72 h)")
    ] = 3600.0


class HistoryTotals(Reply):
    started: int
    finished: int
    retried: int = Field(description="runs that raised and whose job will run again")
    failed: int = Field(description="runs whose job ended failed")
    cancelled: int
    p50: Seconds
    p95: Seconds
    p99: Seconds


class HistoryPointReply(HistoryTotals):
    time: int = Field(description="the point's start: Redis server epoch seconds")
    step: int = Field(description="seconds it spans: 60, or 600 beyond 8 hours")


class HistoryReply(Reply):
    queue: str
    since: float
    totals: HistoryTotals
    points: list[HistoryPointReply] = Field(description="oldest first; empty ones left out")


def history_reply(queue: str, since: float, points: list[HistoryPoint]) -> HistoryReply:
    return HistoryReply(
        queue=queue,
        since=since,
        totals=HistoryTotals.model_validate(totals(points)),
        points=[HistoryPointReply.model_validate(each.as_dict()) for each in points],
    )


async def get_history(request: Request, queue: str, query: HistoryQuery) -> Response:
    """The points of the queue that start at or after now - ``since`` (Redis's
    clock): one a minute up to 8 hours back, one per ten minutes beyond."""
    points = await client_of(request).get_history(queue, since=query.since)
    return reply(history_reply(queue, query.since, points))


OPERATIONS = [
    Operation(
        "GET",
        "/v1/queues/{queue}/history",
        "getHistory",
        "a job queue's metrics history",
        get_history,
        {200: Answer(HistoryReply, "its points and their totals")},
        query=HistoryQuery,
    ),
]
