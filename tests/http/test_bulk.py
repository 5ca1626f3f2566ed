"""The bulk routes in-process: cancel, retry, promote (filters in the body),
purge (DELETE .../jobs), update (PATCH .../jobs/{id}), delete a queue if idle;
409 queue_busy and not_updatable; a job named "cancel" stays a job."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.http.conftest import Api, ApiRunner

Keys = Callable[[], list[bytes]]


def test_bulk_routes_answer_how_many(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        client = api.client
        await client.submit_many("q", [f"d{i}" for i in range(5)], delay=600)
        await client.submit_many("q", ["a", "b", "c"])
        promoted = await api.http.post("/v1/queues/q/jobs/promote", json={"limit": 2})
        assert (promoted.status_code, promoted.json()) == (200, {"promoted": 2})
        cancelled = await api.http.post("/v1/queues/q/jobs/cancel", json={"state": "queued"})
        assert (cancelled.status_code, cancelled.json()) == (200, {"cancelled": 5})
        retried = await api.http.post("/v1/queues/q/jobs/retry", json={"limit": 4})
        assert retried.json() == {"retried": 4}
        assert (await api.http.post("/v1/queues/q/jobs/cancel", json={})).json() == {"cancelled": 7}
        purged = await api.http.delete(
            "/v1/queues/q/jobs", params={"state": "cancelled", "older_than": 3600}
        )
        assert purged.json() == {"purged": 0}
        purged = await api.http.delete("/v1/queues/q/jobs", params={"state": "cancelled"})
        assert (purged.status_code, purged.json()) == (200, {"purged": 8})
        assert sum((await client.count_jobs("q")).values()) == 0

    api(scenario)


def test_update_a_job_and_a_job_named_cancel(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit("q", "x", id="cancel")
        changed = await api.http.patch("/v1/queues/q/jobs/cancel", json={"delay": 600})
        assert changed.status_code == 200, changed.text
        assert changed.json()["id"] == "cancel" and changed.json()["state"] == "delayed"
        got = await api.http.get("/v1/queues/q/jobs/cancel")
        assert got.json()["state"] == "delayed"
        assert (await api.http.post("/v1/queues/q/jobs/cancel/cancel")).status_code == 200
        refused = await api.http.patch("/v1/queues/q/jobs/cancel", json={"priority": 1})
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "not_updatable"
        missing = await api.http.patch("/v1/queues/q/jobs/nope", json={"priority": 1})
        assert missing.status_code == 404

    api(scenario)


def test_delete_queue_if_idle(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit("q", "x")
        await api.client.start_worker()
        [process] = (await api.client.internals.take_jobs("q", [], 1))[1]
        busy = await api.http.delete("/v1/queues/q", params={"if_idle": "true"})
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "queue_busy"
        assert (await api.client.count_jobs("q"))["active"] == 1
        await api.client.internals.take_jobs("q", [(process, "s", b"")], 0)
        gone = await api.http.delete("/v1/queues/q", params={"if_idle": "true"})
        assert (gone.status_code, gone.json()) == (200, {"deleted": "q"})
        assert await api.client.get_queues() == []

    api(scenario)


@pytest.mark.parametrize(
    ("method", "path", "payload", "code"),
    [
        ("POST", "/v1/queues/q/jobs/cancel", {"state": "finished"}, "invalid_option"),
        ("POST", "/v1/queues/q/jobs/retry", {"state": "queued"}, "invalid_option"),
        ("POST", "/v1/queues/q/jobs/retry", {"limit": 0}, "invalid_option"),
        ("POST", "/v1/queues/q/jobs/promote", {"limit": None}, "invalid_option"),
        ("POST", "/v1/queues/q/jobs/promote", {"nope": 1}, "unknown_field"),
        ("PATCH", "/v1/queues/q/jobs/j", {"delay": 1, "at": 5}, "invalid_option"),
        ("PATCH", "/v1/queues/q/jobs/j", {"priority": 1.5}, "invalid_option"),
        ("DELETE", "/v1/queues/q/jobs?state=queued", None, "invalid_parameter"),
        ("DELETE", "/v1/queues/q/jobs?state=failed&older_than=-1", None, "invalid_parameter"),
        ("DELETE", "/v1/queues/q/jobs?state=failed&limit=0", None, "invalid_parameter"),
        ("DELETE", "/v1/queues/q?if_idle=yes", None, "invalid_parameter"),
    ],
)
def test_bad_bulk_requests_write_nothing(
    api: ApiRunner, keys: Keys, method: str, path: str, payload: object, code: str
) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit("q", "x", id="j")
        before = keys()
        answer = await api.http.request(method, path, json=payload)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] == code
        assert keys() == before

    api(scenario)
