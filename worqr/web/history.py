"""The web view's charts of the metrics history: the section a page holds
them in, and ``/ui/api/history`` (one job queue's, or with no queue the sum of
every queue's: the mesh-wide chart). ``static/charts.js`` draws them with the
vendored uPlot (``static/vendor/uplot``)."""

from __future__ import annotations

import asyncio
from html import escape

from pydantic import Field

from .._clients.async_client import AsyncWorqr
from .._core.history import parse_since
from .._core.history_model import merge
from ..http.errors import ApiError
from ..http.history import HistoryReply, history_reply

RANGES = (("1h", 3600), ("8h", 8 * 3600), ("72h", 72 * 3600))
"""The spans a chart shows, by its buttons (the first is shown at first)."""

CHARTS = (
    ("throughput", "runs started and finished"),
    ("failures", "runs retried and failed"),
    ("runtime", "run time: p50, p95, p99 (seconds, the upper bound of their bucket)"),
)


def history_section(what: str) -> str:
    """The charts' section: range buttons and one container per chart, which
    charts.js fills (``data-points``: how many points it draws)."""
    buttons = " ".join(
        f'<button type="button" class="range" data-since="{seconds}">{label}</button>'
        for label, seconds in RANGES
    )
    charts = "".join(
        f'<figure class="chart" id="chart-{name}" data-chart="{name}" data-points="0">'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
        for name, caption in CHARTS
    )
    return f"""
<section id="history-section"><h2>History <span class="muted">({escape(what)}; per
minute, per ten minutes beyond 8 hours, by Redis's clock)</span></h2>
<p id="history-ranges">{buttons} <span id="history-result" class="muted"></span></p>
<div class="charts">{charts}</div></section>"""


def since_of(text: str) -> float:
    """The ``since`` a chart asks for (seconds, or 30m, 8h...); 400 if bad."""
    try:
        return parse_since(text)
    except (TypeError, ValueError) as error:
        raise ApiError(400, "bad_request", str(error)) from None


class HistoryView(HistoryReply):
    now: float = Field(description="Redis's clock: the charts end there")


async def read_history(client: AsyncWorqr, queue: str | None, since: float) -> HistoryView:
    """The queue's history; with no queue, every queue's summed (a task queue has none)."""
    if queue is not None:
        points = await client.get_history(queue, since=since)
    else:
        queues = await client.get_queues()
        series = await asyncio.gather(*(client.get_history(q, since=since) for q in queues))
        points = merge(series)
    answer = history_reply(queue or "", since, points)
    return HistoryView(**dict(answer), now=await client.server_time())
