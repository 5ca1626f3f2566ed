"""The guards: the bearer token on every API route (and for extra routes that
ask), the body limit, the Host check, cross-site mutations, and payloads kept
out of logs."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from tests.http.conftest import TOKEN, Api, ApiRunner
from worqr.http.app import OPERATIONS
from worqr.http.auth import is_loopback, read_token_file, require_token

SECRET = "card-4242-4242-4242-4242"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def api_operations() -> list[tuple[str, str]]:
    """Every (method, path) of the API, params filled."""
    return [
        (operation.method, operation.path.replace("{queue}", "q").replace("{id}", "j"))
        for operation in OPERATIONS
    ]


@pytest.mark.parametrize(("method", "path"), api_operations())
def test_every_api_route_needs_the_token(
    api: ApiRunner, keys: Callable[[], list[bytes]], method: str, path: str
) -> None:
    async def scenario(api: Api) -> None:
        body = {"payload": SECRET} if method == "POST" else None
        for headers in (
            {},
            {"Authorization": "Bearer wrong-token-0123456789"},
            {"Authorization": TOKEN},
        ):
            answer = await api.http.request(method, path, json=body, headers=headers)
            assert answer.status_code == 401, (headers, answer.text)
            assert answer.json()["error"]["code"] == "unauthorized"
            assert answer.headers["www-authenticate"].startswith("Bearer")
        assert keys() == []  # refused before anything was written
        answer = await api.http.request(method, path, headers=AUTH)
        assert answer.status_code != 401

    api(scenario, token=TOKEN, trusted_hosts=None)


def test_a_right_token_is_accepted_and_a_cookie_is_not_a_token(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        ok = await api.http.post("/v1/queues/q/jobs", json={"payload": "x"}, headers=AUTH)
        assert ok.status_code == 201
        api.http.cookies.set("Authorization", f"Bearer {TOKEN}")
        refused = await api.http.post("/v1/queues/q/jobs", json={"payload": "x"})
        assert refused.status_code == 401
        assert (await api.client.count_jobs("q"))["queued"] == 1

    api(scenario, token=TOKEN)


def test_extra_routes_come_after_the_api_and_guard_with_require_token(api: ApiRunner) -> None:
    async def mutate(request: Request) -> Response:
        require_token(request)
        return JSONResponse({"done": True})

    async def page(request: Request) -> Response:
        return PlainTextResponse("web view")

    extra = [
        Route("/ui/retry", mutate, methods=["POST"]),
        Mount("/", routes=[Route("/{path:path}", page)]),  # a catch-all, as the web view's
    ]

    async def scenario(api: Api) -> None:
        assert (await api.http.get("/anything")).text == "web view"
        assert (await api.http.get("/v1/queues", headers=AUTH)).json() == {"queues": []}
        refused = await api.http.post("/ui/retry")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        assert (await api.http.post("/ui/retry", headers=AUTH)).json() == {"done": True}
        assert api.app.state.token == TOKEN and api.app.state.show_payloads is False
        assert api.app.state.client is api.client

    api(scenario, token=TOKEN, extra_routes=extra)


def test_a_declared_body_over_the_limit_is_413_and_writes_nothing(
    api: ApiRunner, keys: Callable[[], list[bytes]]
) -> None:
    async def scenario(api: Api) -> None:
        body = {"payload": "x" * 2000}
        answer = await api.http.post("/v1/queues/q/jobs", json=body)
        assert answer.status_code == 413 and answer.json()["error"]["code"] == "body_too_large"
        assert "1,000 bytes" in answer.json()["error"]["message"]
        fits = await api.http.post("/v1/queues/q/jobs", json={"payload": "x" * 900})
        assert fits.status_code == 201

    api(scenario, max_body_bytes=1000)
    assert len(keys()) > 0  # the one that fit


def test_a_streamed_body_is_cut_off_at_the_limit(
    api: ApiRunner, keys: Callable[[], list[bytes]]
) -> None:
    sent: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: chunked
        yield b'{"payload": "'
        for _ in range(100):
            sent.append(1)
            yield b"x" * 100
        yield b'"}'

    async def scenario(api: Api) -> None:
        answer = await api.http.post("/v1/queues/q/jobs", content=chunks())
        assert answer.status_code == 413 and answer.json()["error"]["code"] == "body_too_large"

    api(scenario, max_body_bytes=1000)
    assert len(sent) < 100  # refused as it passed the limit, not after reading it all
    assert keys() == []


def test_without_a_token_only_loopback_host_names_are_answered(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        for host in ("127.0.0.1:8080", "localhost:8080", "[::1]:8080", "localhost"):
            answer = await api.http.get("/v1/queues", headers={"Host": host})
            assert answer.status_code == 200, host
        for host in ("attacker.example:8080", "127.0.0.1.nip.io", ""):
            answer = await api.http.get("/v1/queues", headers={"Host": host})
            assert answer.status_code == 403 and answer.json()["error"]["code"] == "untrusted_host"

    api(scenario)


def test_mutations_from_another_sites_page_are_refused(
    api: ApiRunner, keys: Callable[[], list[bytes]]
) -> None:
    async def scenario(api: Api) -> None:
        for headers in (
            {"Origin": "https://attacker.example"},
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
        ):
            for method, path in (
                ("POST", "/v1/queues/q/jobs"),
                ("POST", "/v1/queues/q/dead-letters/purge"),
            ):
                answer = await api.http.request(
                    method, path, content=b'{"payload": "x"}', headers=headers
                )
                assert answer.status_code == 403, (headers, path)
                assert answer.json()["error"]["code"] == "cross_origin"
        # Reads from anywhere, and mutations from our own pages, still work.
        read = await api.http.get("/v1/queues", headers={"Origin": "https://attacker.example"})
        assert read.status_code == 200
        assert keys() == []
        own = await api.http.post(
            "/v1/queues/q/jobs", json={"payload": "x"}, headers={"Origin": "http://127.0.0.1:8080"}
        )
        assert own.status_code == 201

    api(scenario)


def test_payloads_never_reach_the_logs(api: ApiRunner, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(api: Api) -> None:
        await api.http.post("/v1/queues/q/jobs", json={"payload": SECRET, "colour": 1})
        await api.http.post("/v1/queues/q/jobs", json={"payload": SECRET, "priority": "x"})
        ref = await api.http.post("/v1/queues/q/jobs", json={"payload": SECRET})
        await api.http.get(f"/v1/queues/q/jobs/{ref.json()['id']}")
        await api.http.post("/v1/queues/t/tasks", json={"task": SECRET})
        await api.http.post("/v1/queues/q/tasks", json={"task": SECRET})  # 409
        await api.http.post("/v1/queues/t/tasks/cancel", json={"task": SECRET})

    with caplog.at_level(logging.DEBUG):
        api(scenario)
    assert caplog.records  # something was logged (the client, httpx): the check means something
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def test_token_files_and_loopback_addresses(tmp_path: Path) -> None:
    good = tmp_path / "token"
    good.write_text(f"{TOKEN}\n")
    assert read_token_file(good) == TOKEN
    for text in ("", "short", "two words-0123456789"):
        (tmp_path / "bad").write_text(text)
        with pytest.raises(ValueError) as raised:
            read_token_file(tmp_path / "bad")
        assert text not in str(raised.value) or not text
    assert all(map(is_loopback, ["127.0.0.1", "127.8.9.1", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.5", "example.com", ""]))
