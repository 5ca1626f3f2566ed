"""The web view's JSON endpoints and pages through httpx (in process, no
browser): what they show, that mutations need the token (tests/web/test_token.py:
that everything under /ui/api/ does), and that hostile names come back as data,
never as markup."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

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
from worqr.http import create_app, require_token
from worqr.web import standalone_app, web_routes

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
    queues = {q["row"]["name"]: q for q in data["queues"]}
    assert set(queues) == {EMAILS, TASKS, IMPORTS, TICKS}
    emails, tasks = queues[EMAILS]["row"], queues[TASKS]["row"]
    assert emails["kind"] == "jobs" and emails["failed"] == FAILING_EMAILS
    assert emails["jobs"]["delayed"] == DELAYED_EMAILS and emails["jobs"]["finished"] == 12
    assert queues[EMAILS]["stats"]["submitted"] == 12 + FAILING_EMAILS + DELAYED_EMAILS
    assert tasks == {
        "name": TASKS,
        "kind": "tasks",
        "tasks": 0,
        "processes": 0,
        "failed": BAD_TASKS,
    }
    [worker] = data["workers"]
    assert worker["row"]["alive"] and worker["row"]["pid"] > 0
    assert sorted(worker["row"]["queues"]) == [EMAILS, TASKS, TICKS]
    assert worker["in_process"] == 0
    assert data["recoveries"] == []  # the first overview is the baseline


def test_a_queue_its_jobs_by_state_a_job_and_dead_letters(
    redis_url: str, prefix: str, mesh: Mesh
) -> None:
    async def scenario(http: httpx.AsyncClient) -> dict[str, Any]:
        queue = (await read(http, "queue", name=EMAILS)).json()
        params = {"queue": EMAILS, "state": "delayed"}
        delayed = (await read(http, "jobs", **params)).json()
        failed = (await read(http, "failed", queue=EMAILS)).json()
        job_id = failed["page"]["jobs"][0]["id"]
        job = (await read(http, "job", queue=EMAILS, id=job_id)).json()
        letters = (await read(http, "failed", queue=TASKS)).json()
        missing = await read(http, "job", queue=EMAILS, id="nope")
        unknown = await read(http, "queue", name="nowhere")
        cursor = await read(http, "jobs", queue=EMAILS, state="queued", cursor="-1")
        return {
            "queue": queue,
            "delayed": delayed,
            "failed": failed,
            "job": job,
            "letters": letters,
            "missing": (missing.status_code, missing.json()["error"]["code"]),
            "unknown": (unknown.status_code, unknown.json()["error"]["code"]),
            "cursor": (cursor.status_code, cursor.json()["error"]["code"]),
        }

    got = run_view(redis_url, prefix, scenario)
    assert got["queue"]["row"]["jobs"]["delayed"] == DELAYED_EMAILS
    assert got["queue"]["now"] > 0
    dues = [job["due"] for job in got["delayed"]["jobs"]]
    assert len(dues) == DELAYED_EMAILS and dues == sorted(dues)  # by due time
    assert got["delayed"]["cursor"] is None
    assert len(got["failed"]["page"]["jobs"]) == FAILING_EMAILS
    assert got["failed"]["page"]["cursor"] is None
    job = got["job"]["job"]
    assert job["state"] == "failed" and job["attempts"] == 1
    assert job["error"] == "Fail: mailbox <b>full</b>"
    assert [step["step"] for step in got["job"]["history"]] == ["created", "last started", "failed"]
    assert got["job"]["payload_bytes"] == len("fail-0") and got["job"]["result_bytes"] is None
    assert not {"payload", "result"} & set(job)  # not without show_payloads
    assert not {"payload_preview", "result_preview"} & set(got["job"])
    assert got["letters"]["page"] == {"kind": "tasks", "count": BAD_TASKS}  # no values
    assert got["letters"]["letters"] == [{"bytes": 5}, {"bytes": 5}]  # sizes only
    assert got["missing"] == (404, "job_not_found")  # the API's code
    assert got["unknown"] == (404, "unknown_queue")
    assert got["cursor"] == (400, "bad_request")  # the API's cursor rule, not a 500


def test_payloads_show_only_with_show_payloads(redis_url: str, prefix: str, mesh: Mesh) -> None:
    async def scenario(http: httpx.AsyncClient) -> tuple[Any, Any]:
        letters = (await read(http, "failed", queue=TASKS)).json()
        job = await read(http, "job", queue=IMPORTS, id=mesh.failed_import)
        return letters, job.json()

    letters, job = run_view(redis_url, prefix, scenario, show_payloads=True)
    assert sorted(row["preview"] for row in letters["letters"]) == ["bad-0", "bad-1"]
    assert "tasks" not in letters["page"]  # previews, never the whole values
    assert job["payload_preview"] == "customers.csv" and job["result_preview"] is None
    assert not {"payload", "result"} & set(job["job"])  # the record holds no values


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
            ("/ui/api/pause", {"queue": EMAILS}),
            ("/ui/api/resume", {"queue": EMAILS}),
        ]:
            codes.append((await http.post(path, json=body, headers=headers)).status_code)
        return codes

    assert run_view(redis_url, prefix, scenario) == [401] * 6
    assert not mesh.client.is_paused(EMAILS)
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


def test_pause_and_resume_a_job_queue_with_the_token(
    redis_url: str, prefix: str, mesh: Mesh
) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[Any]:
        paused = await http.post("/ui/api/pause", json={"queue": EMAILS}, headers=AUTH)
        shown = (await read(http, "queue", name=EMAILS)).json()["limits"]["paused"]
        tasks = await http.post("/ui/api/pause", json={"queue": TASKS}, headers=AUTH)
        unknown = await http.post("/ui/api/pause", json={"queue": "nowhere"}, headers=AUTH)
        resumed = await http.post("/ui/api/resume", json={"queue": EMAILS}, headers=AUTH)
        return [paused.json(), shown, tasks.status_code, unknown.status_code, resumed.json()]

    assert run_view(redis_url, prefix, scenario) == [
        {"paused": True},
        True,
        409,  # a task queue has no pause
        404,  # nor does a queue the mesh does not know (nothing is made)
        {"paused": False},
    ]
    assert not mesh.client.is_paused(EMAILS) and "nowhere" not in mesh.client.get_queues()


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
        return [(a.status_code, a.json()["error"]["code"]) for a in answers]

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
    assert [q["row"]["name"] for q in overview.json()["queues"]] == [HOSTILE_QUEUE]
    record = job.json()["job"]
    assert record["id"] == HOSTILE_ID and record["queue"] == HOSTILE_QUEUE
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
    assert limits["rate"] == {"starts": 5, "seconds": 2.0} and limits["max_active"] == 4
    assert set(limits) == {"rate", "max_active", "active", "closed_until", "limited", "paused"}
    assert none is None


@pytest.mark.parametrize("show_payloads", [False, True], ids=["hidden", "shown"])
def test_the_view_reads_through_the_apis_records(
    redis_url: str, prefix: str, mesh: Mesh, show_payloads: bool
) -> None:
    """Served by `worqr http`, the view's answers hold the API's own records:
    the same queue rows, worker rows, job records, pages and limits (a job's
    record without its values, whatever ``show_payloads``)."""
    mesh.client.configure_queue(EMAILS, rate=(5, 2.0))
    quoted = {name: quote(name, safe="") for name in (EMAILS, TASKS)}

    async def scenario(http: httpx.AsyncClient) -> dict[str, Any]:
        async def get(path: str, **params: str) -> Any:
            answer = await http.get(path, params=params, headers=AUTH)
            assert answer.status_code == 200, (path, answer.text)
            return answer.json()

        api = {
            "queues": await get("/v1/queues"),
            "workers": await get("/v1/workers"),
            "delayed": await get(f"/v1/queues/{quoted[EMAILS]}/jobs", state="delayed"),
            "failed": await get(f"/v1/queues/{quoted[EMAILS]}/dead-letters"),
            "letters": await get(f"/v1/queues/{quoted[TASKS]}/dead-letters"),
            "limits": await get(f"/v1/queues/{quoted[EMAILS]}/limits"),
            "job": await get(f"/v1/queues/{IMPORTS}/jobs/{mesh.failed_import}"),
        }
        view = {
            "overview": await get("/ui/api/overview"),
            "queue": await get("/ui/api/queue", name=EMAILS),
            "delayed": await get("/ui/api/jobs", queue=EMAILS, state="delayed"),
            "failed": await get("/ui/api/failed", queue=EMAILS),
            "letters": await get("/ui/api/failed", queue=TASKS),
            "job": await get("/ui/api/job", queue=IMPORTS, id=mesh.failed_import),
        }
        api_missing = await http.get(f"/v1/queues/{quoted[EMAILS]}/jobs/nope", headers=AUTH)
        view_missing = await read(http, "job", queue=EMAILS, id="nope")
        api["missing"] = (api_missing.status_code, api_missing.json())
        view["missing"] = (view_missing.status_code, view_missing.json())
        return {"api": api, "view": view}

    got = run_api(redis_url, prefix, scenario, show_payloads=show_payloads)
    api, view = got["api"], got["view"]

    def without_values(record: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in record.items() if k.split("_b64")[0] not in ("payload", "result")}

    assert [q["row"] for q in view["overview"]["queues"]] == api["queues"]["queues"]
    assert [w["row"] for w in view["overview"]["workers"]] == api["workers"]["workers"]
    assert view["queue"]["row"] == next(q for q in api["queues"]["queues"] if q["name"] == EMAILS)
    assert view["queue"]["limits"] == api["limits"]
    assert view["delayed"] == {
        "jobs": [without_values(job) for job in api["delayed"]["jobs"]],
        "cursor": api["delayed"]["cursor"],
    }
    assert view["failed"]["page"] == {
        **api["failed"],
        "jobs": [without_values(job) for job in api["failed"]["jobs"]],
    }
    assert view["letters"]["page"] == {"kind": "tasks", "count": api["letters"]["count"]}
    assert view["job"]["job"] == without_values(api["job"])
    assert ("payload" in api["job"]) is show_payloads  # the API's own rule, unchanged
    assert view["missing"] == api["missing"]  # an error too: the same status and body
    assert view["missing"][0] == 404


def run_api(redis_url: str, prefix: str, scenario: Scenario, *, show_payloads: bool) -> Any:
    """Run ``scenario(http)`` against `worqr http`'s application, the view mounted."""

    async def main() -> Any:
        settings = worqr.Settings(prefix=prefix, **QUIET)
        async with worqr.AsyncWorqr(redis_url, settings=settings) as client:
            app = create_app(
                client,
                token=TOKEN,
                show_payloads=show_payloads,
                extra_routes=web_routes(guard=require_token),
            )
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://view") as http:
                return await scenario(http)

    return asyncio.run(main())


def test_a_job_queues_groups_page_by_page_and_pause_by_group(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    for i in range(7):
        wq.submit("tenants", "x", group=f"t{i}")
    wq.configure_group("tenants", "t0", rate=(5, 1.0), max_active=2)
    wq.enqueue("plain", "t")

    async def scenario(http: httpx.AsyncClient) -> dict[str, Any]:
        seen: list[dict[str, Any]] = []
        cursor = ""
        while True:
            page = (await read(http, "groups", queue="tenants", limit="3", cursor=cursor)).json()
            seen += page["page"]["groups"]
            cursor = page["page"]["cursor"]
            assert isinstance(page["now"], float)
            if cursor is None:
                break
        paused = await http.post(
            "/ui/api/pause", json={"queue": "tenants", "group": "t1"}, headers=AUTH
        )
        after = (await read(http, "groups", queue="tenants", limit="50")).json()["page"]
        resumed = await http.post(
            "/ui/api/resume", json={"queue": "tenants", "group": "t1"}, headers=AUTH
        )
        bad = [
            await http.post("/ui/api/pause", json={"queue": "tenants", "group": ""}, headers=AUTH),
            await http.post("/ui/api/pause", json={"queue": "tenants", "group": 5}, headers=AUTH),
            await read(http, "groups", queue="tenants", limit="0"),
            await read(http, "groups", queue="tenants", cursor="x"),
            await read(http, "groups", queue="plain"),
        ]
        return {
            "seen": seen,
            "paused": paused.json(),
            "after": after,
            "resumed": resumed.json(),
            "bad": [(answer.status_code, answer.json()["error"]["code"]) for answer in bad],
        }

    result = run_view(redis_url, prefix, scenario)
    by_name = {group["name"]: group for group in result["seen"]}
    assert sorted(by_name) == [f"t{i}" for i in range(7)]
    assert by_name["t0"]["rate"] == {"starts": 5, "seconds": 1.0}
    assert by_name["t0"]["max_active"] == 2 and by_name["t1"]["max_active"] is None
    assert result["paused"] == {"paused": True, "group": "t1"}
    assert [g["paused"] for g in result["after"]["groups"] if g["name"] == "t1"] == [True]
    assert result["resumed"] == {"paused": False, "group": "t1"}
    assert result["bad"] == [
        (400, "bad_request"),
        (400, "bad_request"),
        (400, "bad_request"),
        (400, "bad_request"),
        (409, "wrong_queue_kind"),
    ]
    assert not wq.is_paused("tenants", group="t1") and not wq.is_paused("tenants")
