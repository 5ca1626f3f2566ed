"""The web view's JSON endpoints and pages through httpx (in process, no
browser): what they show, that mutations need the token (tests/web/test_token.py:
that everything under /ui/api/ does), and that hostile names come back as data,
never as markup."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

import worqr
from tests.support.timing import QUIET
from tests.web.conftest import (
    BAD_TASKS,
    DELAYED_EMAILS,
    EMAILS,
    FAILING_EMAILS,
    IMPORTS,
    TASKS,
    TICKS,
    TOKEN,
    Mesh,
)
from worqr.web import standalone_app

Scenario = Callable[[httpx.AsyncClient], Awaitable[Any]]
AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def read(http: httpx.AsyncClient, path: str, **params: str) -> httpx.Response:
    """A read of the view's JSON, with the token: reads need it too."""
    return await http.get(f"/ui/api/{path}", params=params, headers=AUTH)


def run_view(
    redis_url: str, prefix: str, scenario: Scenario, *, show_payloads: bool = False
) -> Any:
    """Run ``scenario(http)`` against the standalone view of the test's mesh."""

    async def main() -> Any:
        settings = worqr.Settings(prefix=prefix, **QUIET)
        async with worqr.AsyncWorqr(redis_url, settings=settings) as client:
            app = standalone_app(client, token=TOKEN, show_payloads=show_payloads)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://view") as http:
                return await scenario(http)

    return asyncio.run(main())


def test_the_overview_has_every_queue_with_its_counts_and_the_workers(
    redis_url: str, prefix: str, mesh: Mesh
) -> None:
    async def scenario(http: httpx.AsyncClient) -> dict[str, Any]:
        response = await read(http, "overview")
        assert response.status_code == 200
        return response.json()

    data = run_view(redis_url, prefix, scenario)
    queues = {q["name"]: q for q in data["queues"]}
    assert set(queues) == {EMAILS, TASKS, IMPORTS, TICKS}
    assert queues[EMAILS]["kind"] == "jobs"
    assert queues[EMAILS]["counts"]["failed"] == FAILING_EMAILS
    assert queues[EMAILS]["counts"]["delayed"] == DELAYED_EMAILS
    assert queues[EMAILS]["counts"]["finished"] == 12
    assert queues[EMAILS]["stats"]["submitted"] == 12 + FAILING_EMAILS + DELAYED_EMAILS
    assert queues[TASKS]["kind"] == "tasks"
    assert queues[TASKS]["counts"] == {"queued": 0, "active": 0, "failed": BAD_TASKS}
    [worker] = data["workers"]
    assert worker["alive"] and worker["pid"] > 0
    assert sorted(worker["queues"]) == [EMAILS, TASKS, TICKS]
    assert data["recoveries"] == []  # the first overview is the baseline


def test_a_queue_its_jobs_by_state_a_job_and_dead_letters(
    redis_url: str, prefix: str, mesh: Mesh
) -> None:
    async def scenario(http: httpx.AsyncClient) -> dict[str, Any]:
        queue = (await read(http, "queue", name=EMAILS)).json()
        params = {"queue": EMAILS, "state": "delayed"}
        delayed = (await read(http, "jobs", **params)).json()
        failed = (await read(http, "failed", queue=EMAILS)).json()
        job_id = failed["jobs"][0]["id"]
        job = (await read(http, "job", queue=EMAILS, id=job_id)).json()
        letters = (await read(http, "failed", queue=TASKS)).json()
        missing = await read(http, "job", queue=EMAILS, id="nope")
        unknown = await read(http, "queue", name="nowhere")
        return {
            "queue": queue,
            "delayed": delayed,
            "failed": failed,
            "job": job,
            "letters": letters,
            "missing": (missing.status_code, missing.json()["error"]),
            "unknown": (unknown.status_code, unknown.json()["error"]),
        }

    got = run_view(redis_url, prefix, scenario)
    assert got["queue"]["states"][:2] == ["delayed", "queued"]
    dues = [job["due"] for job in got["delayed"]["jobs"]]
    assert len(dues) == DELAYED_EMAILS and dues == sorted(dues)  # by due time
    assert len(got["failed"]["jobs"]) == FAILING_EMAILS
    job = got["job"]
    assert job["state"] == "failed" and job["attempts"] == 1
    assert job["error"] == "Fail: mailbox <b>full</b>"
    assert [step["step"] for step in job["history"]] == ["created", "last started", "failed"]
    assert job["payload_bytes"] == len("fail-0") and job["result_bytes"] is None
    assert "payload" not in job  # not without show_payloads
    assert got["letters"]["letters"] == [{"bytes": 5}, {"bytes": 5}]  # sizes only
    assert got["missing"] == (404, "unknown_job")
    assert got["unknown"] == (404, "unknown_queue")


def test_payloads_show_only_with_show_payloads(redis_url: str, prefix: str, mesh: Mesh) -> None:
    async def scenario(http: httpx.AsyncClient) -> tuple[Any, Any]:
        letters = (await read(http, "failed", queue=TASKS)).json()
        job = await read(http, "job", queue=IMPORTS, id=mesh.failed_import)
        return letters, job.json()

    letters, job = run_view(redis_url, prefix, scenario, show_payloads=True)
    assert sorted(row["payload"] for row in letters["letters"]) == ["bad-0", "bad-1"]
    assert job["payload"] == "customers.csv"


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"Cookie": f"t={TOKEN}"}],
    ids=["none", "wrong", "no-scheme", "cookie"],
)
def test_a_mutation_without_the_token_is_refused_and_changes_nothing(
    redis_url: str, prefix: str, mesh: Mesh, headers: dict[str, str]
) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[int]:
        job = {"queue": IMPORTS, "id": mesh.failed_import}
        codes = []
        for path, body in [
            ("/ui/api/retry", job),
            ("/ui/api/cancel", job),
            ("/ui/api/redrive", {"queue": TASKS}),
            ("/ui/api/purge", {"queue": EMAILS}),
        ]:
            codes.append((await http.post(path, json=body, headers=headers)).status_code)
        return codes

    assert run_view(redis_url, prefix, scenario) == [401, 401, 401, 401]
    info = mesh.client.get_job(IMPORTS, mesh.failed_import)
    assert info is not None and info.state == "failed"
    assert mesh.client.count_failed(TASKS) == BAD_TASKS
    assert mesh.client.count_jobs(EMAILS)["failed"] == FAILING_EMAILS


def test_retry_redrive_and_purge_with_the_token(redis_url: str, prefix: str, mesh: Mesh) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[Any]:
        job = {"queue": IMPORTS, "id": mesh.failed_import}
        retried = await http.post("/ui/api/retry", json=job, headers=AUTH)
        again = await http.post("/ui/api/retry", json=job, headers=AUTH)  # queued: no-op
        purged = await http.post("/ui/api/purge", json={"queue": EMAILS}, headers=AUTH)
        return [retried.json(), again.json(), purged.json()]

    assert run_view(redis_url, prefix, scenario) == [
        {"done": True},
        {"done": False},
        {"purged": FAILING_EMAILS},
    ]
    info = mesh.client.get_job(IMPORTS, mesh.failed_import)
    assert info is not None and info.state == "queued"  # no worker serves IMPORTS now
    assert mesh.client.count_jobs(EMAILS)["failed"] == 0


def test_bad_mutations_are_refused_before_anything_changes(
    redis_url: str, prefix: str, mesh: Mesh
) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[tuple[int, str]]:
        answers = [
            await http.post("/ui/api/redrive", content=b"queue=tasks", headers=AUTH),
            await http.post("/ui/api/redrive", json=["tasks"], headers=AUTH),
            await http.post("/ui/api/redrive", json={"queue": "a{b}"}, headers=AUTH),
            await http.post("/ui/api/redrive", json={"queue": "x" * 5000}, headers=AUTH),
            await http.post("/ui/api/retry", json={"queue": TASKS, "id": "1"}, headers=AUTH),
            await http.post("/ui/api/retry", json={"queue": IMPORTS}, headers=AUTH),
        ]
        return [(a.status_code, a.json().get("error", a.text)) for a in answers]

    assert run_view(redis_url, prefix, scenario) == [
        (415, "unsupported_media_type"),  # what a cross-site form could send
        (400, "bad_request"),
        (400, "bad_request"),
        (413, "too_large"),
        (409, "wrong_queue_kind"),
        (400, "bad_request"),
    ]
    assert mesh.client.count_failed(TASKS) == BAD_TASKS


HOSTILE_QUEUE = '<img src=x onerror="alert(1)">&amp;'
HOSTILE_ID = '"><script>alert(2)</script>'


def test_hostile_names_come_back_as_data_never_as_markup(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    wq.submit(HOSTILE_QUEUE, "x", id=HOSTILE_ID)

    async def scenario(http: httpx.AsyncClient) -> list[httpx.Response]:
        return [
            await read(http, "overview"),
            await read(http, "job", queue=HOSTILE_QUEUE, id=HOSTILE_ID),
            await http.get("/ui/queue", params={"name": HOSTILE_QUEUE}),
            await http.get("/ui/job", params={"queue": HOSTILE_QUEUE, "id": HOSTILE_ID}),
        ]

    overview, job, queue_page, job_page = run_view(redis_url, prefix, scenario)
    assert overview.headers["content-type"] == "application/json"
    assert [q["name"] for q in overview.json()["queues"]] == [HOSTILE_QUEUE]
    assert job.json()["id"] == HOSTILE_ID and job.json()["queue"] == HOSTILE_QUEUE
    for page in (queue_page, job_page):
        assert page.status_code == 200
        assert "<img" not in page.text and "<script>alert" not in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;amp;" in queue_page.text
    assert "&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in job_page.text


def test_the_pages_and_their_files_are_served(redis_url: str, prefix: str) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[httpx.Response]:
        return [await http.get(path) for path in ("/", "/ui/static/view.js", "/ui/static/view.css")]

    page, script, style = run_view(redis_url, prefix, scenario)
    assert page.status_code == 200 and 'data-page="overview"' in page.text
    assert script.status_code == 200 and "textContent" in script.text
    assert "innerHTML" not in script.text and "insertAdjacentHTML" not in script.text
    assert style.status_code == 200


def test_a_job_queue_reads_with_its_limits_and_a_task_queue_without(
    redis_url: str, prefix: str, mesh: Mesh
) -> None:
    mesh.client.configure_queue(EMAILS, rate=(5, 2.0), max_active=4)

    async def scenario(http: httpx.AsyncClient) -> tuple[Any, Any]:
        jobs = (await read(http, "queue", name=EMAILS)).json()
        tasks = (await read(http, "queue", name=TASKS)).json()
        return jobs["limits"], tasks["limits"]

    limits, none = run_view(redis_url, prefix, scenario)
    assert limits["rate"] == [5, 2.0] and limits["max_active"] == 4
    assert set(limits) == {"rate", "max_active", "active", "closed_until", "limited"}
    assert none is None
