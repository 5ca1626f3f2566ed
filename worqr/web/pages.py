"""The web view's HTML pages: a frame per page, rendered on the server with
every user-controlled name escaped; ``static/view.js`` fills the tables from
the JSON endpoints and keeps them fresh.

No inline script or style: the Content-Security-Policy allows only the view's
own files, so even a missed escape could not run a script.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from .._jobs import LISTED_STATES
from .history import history_section
from .reads import JOB_PAGE_LOG_LINES

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

SEP = "&rsaquo;"  # between the parts of the path at the top of a page

# Shown by view.js when the server refuses a read (or on the header's button).
# The input has no name: were the form ever submitted without the script, the
# token would still not go into a URL.
TOKEN_FORM = """<form id="token-form" class="token-form" hidden>
<p id="token-message"></p>
<label>bearer token <input id="token-input" type="password" autocomplete="off"
spellcheck="false" size="32"></label> <button type="submit">use</button>
<span class="muted">kept in this tab only (sessionStorage) and sent as the header
Authorization: Bearer; empty forgets it</span>
</form>"""

GROUP_COLUMNS = ("group", "queued", "delayed", "active", "rate", "max active", "now", "")
GROUPS_PAGE = 20
"""Groups on a page of a queue's groups table (the next page is a button away)."""

QUEUE_COLUMNS = (
    "queue",
    "kind",
    "queued",
    "active",
    "delayed",
    "retrying",
    "failed",
    "finished",
    "cancelled",
    "in /s",
    "done /s",
    "failed /s",
    "recovered",
)


def _head(cells: tuple[str, ...]) -> str:
    return "<tr>" + "".join(f"<th>{escape(c)}</th>" for c in cells) + "</tr>"


def _table(id: str, columns: tuple[str, ...], empty: str) -> str:
    return (
        f'<table id="{id}"><thead>{_head(columns)}</thead>'
        f'<tbody><tr><td colspan="{len(columns)}" class="muted">{escape(empty)}</td></tr>'
        "</tbody></table>"
    )


def _frame(page: str, title: str, crumbs: str, body: str, data: dict[str, str]) -> Response:
    attributes = "".join(f' data-{k}="{escape(v, quote=True)}"' for k, v in data.items())
    html = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} - worqr</title>
<link rel="stylesheet" href="/ui/static/view.css">
<link rel="stylesheet" href="/ui/static/vendor/uplot/uPlot.min.css">
<script src="/ui/static/view.js" defer></script>
<script src="/ui/static/vendor/uplot/uPlot.iife.min.js" defer></script>
<script src="/ui/static/charts.js" defer></script>
</head>
<body data-page="{page}"{attributes}>
<header>
<nav>{crumbs} <span id="prefix" class="muted"></span></nav>
<span id="status" class="muted">loading...</span>
<button id="token" type="button" title="the bearer token this view sends">token</button>
</header>
{TOKEN_FORM}
<main>
{body}
</main>
<noscript><p>This view fills its tables with JavaScript (the data: /ui/api/).</p></noscript>
</body>
</html>
"""
    return HTMLResponse(html, headers=HEADERS)


def _home_link() -> str:
    return '<a href="/">mesh</a>'


def _queue_link(queue: str) -> str:
    href = "/ui/queue?" + urlencode({"name": queue})
    return f'<a href="{escape(href, quote=True)}">{escape(queue)}</a>'


async def overview_page(request: Request) -> Response:
    body = f"""
<section><h2>Queues</h2>
{_table("queues", QUEUE_COLUMNS, "no queues yet")}
<p class="muted">Rates are per second between two polls; recovered counts tasks and jobs of dead
workers returned to their queue, since the queue was made.</p></section>
{history_section("all queues")}
<section><h2>Workers</h2>
{_table("workers", ("worker", "alive", "host", "pid", "in process", "queues"), "no workers")}
</section>
<section><h2>Recent recoveries</h2>
{_table("recoveries", ("when", "what", "details"), "none seen since this page opened")}
<p class="muted">worqr keeps counters, not a log, of recoveries: this list is what changed
between polls while the view was open (counters that grew, workers that left the mesh).</p>
</section>"""
    return _frame("overview", "mesh", _home_link(), body, {})


async def queue_page(request: Request) -> Response:
    queue = request.query_params.get("name", "")
    crumbs = f"{_home_link()} {SEP} queue <strong>{escape(queue)}</strong>"
    jobs_columns = ("job id", "state", "attempts", "when", "error", "")
    body = f"""
<section><h2>Counts <span id="kind" class="muted"></span></h2>
<div id="counts" class="counts"></div>
<p id="limits" hidden></p>
<p id="pausing" hidden><button id="pause" type="button" class="act">pause</button>
<span id="pause-result" class="muted"></span></p></section>
{history_section("this queue")}
<section id="groups-section" hidden><h2>Groups <span class="muted">(fair share: one job
of each group in turn)</span></h2>
{_table("groups", GROUP_COLUMNS, "loading...")}
<p><button id="groups-first" type="button" hidden>first page</button>
<button id="groups-next" type="button" hidden>next page</button>
<span id="group-result" class="muted"></span></p></section>
<section id="jobs-section" hidden><h2>Jobs <span id="state-name"></span></h2>
<form id="search"><label>job id <input id="search-id" name="id" autocomplete="off"
size="30"></label> <button type="submit">open</button> <span id="search-result"
class="muted"></span></form>
<p id="bulk"><button id="bulk-cancel" type="button" class="act danger" hidden>cancel
all</button> <button id="bulk-retry" type="button" class="act" hidden>retry all</button>
<button id="bulk-promote" type="button" class="act" hidden>run all now</button>
<button id="bulk-purge" type="button" class="act danger" hidden>purge all</button>
<span id="bulk-result" class="muted"></span></p>
{_table("jobs", jobs_columns, "loading...")}
<p><button id="more" type="button" hidden>more</button></p></section>
<section><h2>Dead letters</h2>
<p><button id="redrive" type="button" class="act">retry all</button>
<button id="purge" type="button" class="act danger">purge all</button>
<span id="failed-result" class="muted"></span></p>
<div id="failed"></div></section>"""
    data = {"queue": queue, "states": " ".join(LISTED_STATES), "groups-page": str(GROUPS_PAGE)}
    return _frame("queue", queue, crumbs, body, data)


async def job_page(request: Request) -> Response:
    queue = request.query_params.get("queue", "")
    job_id = request.query_params.get("id", "")
    job = f"job <strong>{escape(job_id)}</strong>"
    crumbs = f"{_home_link()} {SEP} queue {_queue_link(queue)} {SEP} {job}"
    body = f"""
<section><h2>Job</h2>
<table id="detail" class="detail"><tbody><tr><td class="muted">loading...</td></tr></tbody></table>
<p><button id="retry" type="button" class="act" hidden>retry</button>
<button id="cancel" type="button" class="act danger" hidden>cancel</button>
<span id="action-result" class="muted"></span></p></section>
<section><h2>History</h2>
{_table("history", ("step", "at (UTC)", "when"), "loading...")}</section>
<section><h2>Log <span class="muted">(the newest {JOB_PAGE_LOG_LINES} lines its handlers
wrote with current_job().log, oldest first)</span></h2>
<pre id="log" class="log">loading...</pre></section>"""
    return _frame("job", job_id, crumbs, body, {"queue": queue, "job": job_id})


def page_routes() -> list[Route]:
    return [
        Route("/", overview_page, methods=["GET"]),
        Route("/ui/queue", queue_page, methods=["GET"]),
        Route("/ui/job", job_page, methods=["GET"]),
    ]
