"""The token guards every ``/ui/api/`` endpoint, reads as well as mutations,
in both applications that serve the view: `standalone_app(token=...)` and
`worqr http`'s (`create_app(..., extra_routes=web_routes(guard=require_token))`).
The pages and their static files load without it; without a token the reads
are open as before (issue 27). The last test runs the real `worqr http`."""

from __future__ import annotations

import asyncio
import selectors
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

import worqr
from tests.support.cli import start_cli
from tests.support.processes import stop
from tests.support.timing import QUIET
from tests.web.conftest import TOKEN
from worqr.http import create_app
from worqr.http.auth import require_token
from worqr.http.security import LOOPBACK_HOSTS
from worqr.web import bearer_guard, standalone_app, web_routes

JOBS, TASKS, JOB_ID = "orders", "thumbnails", "order-1234"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BASE = "http://127.0.0.1:8080"  # a loopback Host: `worqr http` without a token answers it

READS: list[tuple[str, dict[str, str]]] = [
    ("/ui/api/overview", {}),
    ("/ui/api/queue", {"name": JOBS}),
    ("/ui/api/jobs", {"queue": JOBS, "state": "queued"}),
    ("/ui/api/job", {"queue": JOBS, "id": JOB_ID}),
    ("/ui/api/failed", {"queue": JOBS}),
    ("/ui/api/groups", {"queue": JOBS}),
    ("/ui/api/history", {"queue": JOBS, "since": "8h"}),
]
MUTATIONS: list[tuple[str, dict[str, str]]] = [
    ("/ui/api/retry", {"queue": JOBS, "id": JOB_ID}),  # queued: a no-op when allowed
    ("/ui/api/cancel", {"queue": JOBS, "id": "no-such-order"}),
    ("/ui/api/redrive", {"queue": TASKS}),
    ("/ui/api/purge", {"queue": TASKS}),
    ("/ui/api/pause", {"queue": JOBS}),
    ("/ui/api/resume", {"queue": JOBS}),  # after the pause: as it was
    ("/ui/api/bulk", {"queue": JOBS, "action": "promote"}),  # nothing delayed: a no-op
]
PAGES = [
    "/",
    f"/ui/queue?name={JOBS}",
    f"/ui/job?queue={JOBS}&id={JOB_ID}",
    "/ui/static/view.js",
    "/ui/static/view.css",
    "/ui/static/charts.js",
    "/ui/static/vendor/uplot/uPlot.iife.min.js",
]

# (headers, query parameters) that must not pass for the token.
REFUSED = {
    "none": ({}, {}),
    "wrong": ({"Authorization": "Bearer wrong-token-0123456789"}, {}),
    "empty": ({"Authorization": "Bearer "}, {}),
    "no-scheme": ({"Authorization": TOKEN}, {}),
    "basic": ({"Authorization": f"Basic {TOKEN}"}, {}),
    "cookie": ({"Cookie": f"token={TOKEN}; Authorization=Bearer {TOKEN}"}, {}),
    "query": ({}, {"token": TOKEN, "access_token": TOKEN}),
}
APPS = ["standalone", "worqr-http"]

Scenario = Callable[[httpx.AsyncClient], Awaitable[Any]]


def make_app(kind: str, client: worqr.AsyncWorqr, token: str | None) -> Starlette:
    """The view as each application serves it; `worqr http` trusts only the
    loopback Host names when it has no token, as its command does."""
    if kind == "standalone":
        return standalone_app(client, token=token)
    return create_app(
        client,
        token=token,
        show_payloads=False,
        trusted_hosts=None if token else LOOPBACK_HOSTS,
        extra_routes=web_routes(guard=require_token),
    )


def run_app(redis_url: str, prefix: str, kind: str, token: str | None, scenario: Scenario) -> Any:
    async def main() -> Any:
        settings = worqr.Settings(prefix=prefix, **QUIET)
        async with worqr.AsyncWorqr(redis_url, settings=settings) as client:
            transport = httpx.ASGITransport(app=make_app(kind, client, token))
            async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
                return await scenario(http)

    return asyncio.run(main())


@pytest.fixture
def queues(wq: worqr.Worqr) -> worqr.Worqr:
    """A job queue with one queued job and a task queue with one task."""
    wq.submit(JOBS, "2 boxes", id=JOB_ID)
    wq.enqueue(TASKS, "cat.png")
    return wq


def test_the_tables_here_name_every_endpoint_of_the_view() -> None:
    served = {
        (route.path, method)
        for route in web_routes(guard=bearer_guard(TOKEN))
        if isinstance(route, Route) and route.path.startswith("/ui/api/")
        for method in (route.methods or set()) - {"HEAD"}
    }
    listed = {(path, "GET") for path, _ in READS} | {(path, "POST") for path, _ in MUTATIONS}
    assert served == listed  # a new endpoint must join a table, and so be tested below


@pytest.mark.parametrize("kind", APPS)
def test_every_read_needs_the_token(
    redis_url: str, prefix: str, queues: worqr.Worqr, kind: str
) -> None:
    async def scenario(http: httpx.AsyncClient) -> None:
        for path, params in READS:
            for name, (headers, extra) in REFUSED.items():
                answer = await http.get(path, params={**params, **extra}, headers=headers)
                assert answer.status_code == 401, (path, name, answer.text)
                assert answer.headers["www-authenticate"].startswith("Bearer")
                assert JOB_ID not in answer.text and TASKS not in answer.text
            answer = await http.get(path, params=params, headers=AUTH)
            assert answer.status_code == 200, (path, answer.text)
        overview = (await http.get("/ui/api/overview", headers=AUTH)).json()
        assert {q["row"]["name"] for q in overview["queues"]} == {JOBS, TASKS}
        page = (await http.get("/ui/api/jobs", params=READS[2][1], headers=AUTH)).json()
        assert [job["id"] for job in page["jobs"]] == [JOB_ID]

    run_app(redis_url, prefix, kind, TOKEN, scenario)


@pytest.mark.parametrize("kind", APPS)
def test_every_mutation_needs_the_token(
    redis_url: str, prefix: str, queues: worqr.Worqr, kind: str
) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[Any]:
        answers = []
        for path, body in MUTATIONS:
            for name, (headers, extra) in REFUSED.items():
                answer = await http.post(path, json=body, params=extra, headers=headers)
                assert answer.status_code == 401, (path, name, answer.text)
            answer = await http.post(path, json=body, headers=AUTH)
            assert answer.status_code == 200, (path, answer.text)
            answers.append(answer.json())
        return answers

    answers = run_app(redis_url, prefix, kind, TOKEN, scenario)
    assert answers == [
        {"done": False},
        {"done": False},
        {"redriven": 0},
        {"purged": 0},
        {"paused": True},
        {"paused": False},
        {"done": 0},
    ]
    assert queues.count_jobs(JOBS)["queued"] == 1 and queues.count_tasks(TASKS) == 1
    assert not queues.is_paused(JOBS)


@pytest.mark.parametrize("token", [TOKEN, None], ids=["token", "no-token"])
@pytest.mark.parametrize("kind", APPS)
def test_the_pages_and_their_files_load_without_the_token(
    redis_url: str, prefix: str, queues: worqr.Worqr, kind: str, token: str | None
) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[httpx.Response]:
        return [await http.get(path) for path in PAGES]

    for path, answer in zip(PAGES, run_app(redis_url, prefix, kind, token, scenario), strict=True):
        assert answer.status_code == 200, path
        if not path.startswith("/ui/static/"):
            assert 'id="token-form"' in answer.text  # where the page asks for the token
            assert "script-src 'self'" in answer.headers["content-security-policy"]
            assert "unsafe-inline" not in answer.headers["content-security-policy"]


@pytest.mark.parametrize("kind", APPS)
def test_without_a_token_the_reads_are_open(
    redis_url: str, prefix: str, queues: worqr.Worqr, kind: str
) -> None:
    async def scenario(http: httpx.AsyncClient) -> None:
        for path, params in READS:
            answer = await http.get(path, params=params)
            assert answer.status_code == 200, (path, answer.text)
        job = (await http.get("/ui/api/job", params={"queue": JOBS, "id": JOB_ID})).json()
        assert job["job"]["state"] == "queued"

    run_app(redis_url, prefix, kind, None, scenario)


def test_without_a_token_the_standalone_view_refuses_every_mutation(
    redis_url: str, prefix: str, queues: worqr.Worqr
) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[tuple[int, str]]:
        answers = []
        for path, body in MUTATIONS:
            for headers in ({}, AUTH):
                answer = await http.post(path, json=body, headers=headers)
                answers.append((answer.status_code, answer.text))
        return answers

    answers = run_app(redis_url, prefix, "standalone", None, scenario)
    assert answers == [(401, "this view is read-only: it runs without a token")] * 14
    assert queues.count_tasks(TASKS) == 1 and not queues.is_paused(JOBS)


def test_without_a_token_worqr_http_keeps_its_loopback_rules(
    redis_url: str, prefix: str, queues: worqr.Worqr
) -> None:
    async def scenario(http: httpx.AsyncClient) -> list[int]:
        redrive = ("/ui/api/redrive", {"queue": TASKS})
        return [
            (await http.post(redrive[0], json=redrive[1])).status_code,  # no token needed
            (
                await http.post(
                    redrive[0], json=redrive[1], headers={"Origin": "https://attacker.example"}
                )
            ).status_code,
            (await http.get("/ui/api/overview", headers={"Host": "attacker.example"})).status_code,
        ]

    assert run_app(redis_url, prefix, "worqr-http", None, scenario) == [200, 403, 403]


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        bearer_guard("")


def first_line(process: subprocess.Popen[bytes], timeout: float = 20) -> str:
    """The first line ``process`` prints on stdout, within ``timeout`` seconds."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise AssertionError(f"no line on stdout within {timeout} s")
    return process.stdout.readline().decode()


@pytest.mark.slow
def test_worqr_http_with_a_token_file_guards_the_views_reads(
    redis_url: str, prefix: str, queues: worqr.Worqr, tmp_path: Path
) -> None:
    token = f"{TOKEN}-0123456789"  # the command wants 16 characters or more
    token_file = tmp_path / "token.txt"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    auth = {"Authorization": f"Bearer {token}"}
    options = ["--port", "0", "--token-file", str(token_file), "--url", redis_url]
    with open(tmp_path / "server.log", "wb") as log:
        process = start_cli("http", *options, "--prefix", prefix, stderr=log)
    try:
        line = first_line(process)
        assert line.startswith("worqr http: serving on http://127.0.0.1:"), line
        with httpx.Client(base_url=line.split()[4], timeout=20) as http:
            for path, params in READS:
                assert http.get(path, params=params).status_code == 401, path
                assert http.get(path, params=params, headers=auth).status_code == 200, path
            for path in PAGES:
                assert http.get(path).status_code == 200, path
    finally:
        stop(process)
