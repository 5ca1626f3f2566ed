"""A job queue's traffic limits over HTTP, read and changed as `get_limits` and
`configure_queue` do (a field not given stays, null removes it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.http.conftest import Api, ApiRunner

NONE = {"rate": None, "max_active": None, "active": 0, "closed_until": None, "limited": False}


def test_limits_are_set_kept_and_removed_field_by_field(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit("jobs", "x")
        assert (await api.http.get("/v1/queues/jobs/limits")).json() == NONE
        both = await api.http.put(
            "/v1/queues/jobs/limits",
            json={"rate": {"starts": 20, "seconds": 1.5}, "max_active": 3},
        )
        assert both.status_code == 200, both.text
        assert both.json() == {**NONE, "rate": {"starts": 20, "seconds": 1.5}, "max_active": 3}
        library = await api.client.get_limits("jobs")
        assert library.rate == (20, 1.5) and library.max_active == 3
        capped = await api.http.put("/v1/queues/jobs/limits", json={"max_active": 5})
        assert capped.json()["rate"] == {"starts": 20, "seconds": 1.5}  # not given: kept
        assert capped.json()["max_active"] == 5
        cleared = await api.http.put("/v1/queues/jobs/limits", json={"rate": None})
        assert cleared.json() == {**NONE, "max_active": 5}
        assert (await api.client.get_limits("jobs")).rate is None

    api(scenario)


def test_a_cap_reached_reads_as_limited(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit_many("jobs", ["a", "b"])
        await api.http.put("/v1/queues/jobs/limits", json={"max_active": 1})
        await api.client.start_worker()
        _, taken, _ = await api.client.internals.take_jobs("jobs", [], 2)
        assert len(taken) == 1  # the cap held the second back
        answer = (await api.http.get("/v1/queues/jobs/limits")).json()
        assert answer["active"] == 1 and answer["limited"] is True

    api(scenario)


@pytest.mark.parametrize(
    "body",
    [
        {"rate": {"starts": 0, "seconds": 1}},
        {"rate": {"starts": 5}},
        {"rate": {"starts": 5, "seconds": 1, "burst": 2}},
        {"rate": [5, 1]},
        {"rate": {"starts": "5", "seconds": 1}},
        {"rate": {"starts": 5, "seconds": -1}},
        {"rate": {"starts": True, "seconds": 1}},
        {"max_active": 0},
        {"max_active": 2.5},
        {"max_active": True},
        {"max_active": 2, "rate": {"starts": 5, "seconds": 0}},
        {"max_recoveries": 3},
    ],
)
def test_bad_limits_are_400_and_change_nothing(
    api: ApiRunner, keys: Callable[[], list[bytes]], body: object
) -> None:
    async def scenario(api: Api) -> None:
        await api.client.configure_queue("jobs", max_active=7)
        before = keys()
        answer = await api.http.put("/v1/queues/jobs/limits", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] in ("invalid_option", "unknown_field")
        assert (await api.client.get_limits("jobs")).max_active == 7
        assert keys() == before

    api(scenario)


def test_limits_on_a_task_queue_are_409(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.enqueue_many("plain", ["a"])
        answer = await api.http.put("/v1/queues/plain/limits", json={"max_active": 2})
        assert answer.status_code == 409 and answer.json()["error"]["code"] == "wrong_queue_kind"
        assert (await api.http.get("/v1/queues/plain/limits")).status_code == 409
        assert await api.client.count_tasks("plain") == 1

    api(scenario)
