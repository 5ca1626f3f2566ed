"""A job queue's traffic limits over HTTP, read and changed as `get_limits` and
`configure_queue` do (a field not given stays, null removes it)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.http.conftest import Api, ApiRunner

NONE = {
    "rate": None,
    "max_active": None,
    "active": 0,
    "closed_until": None,
    "limited": False,
    "paused": False,
}


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


def test_a_queue_is_paused_and_resumed_and_its_limits_say_so(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        paused = await api.http.post("/v1/queues/jobs/pause")  # no body: the queue
        assert (paused.status_code, paused.json()) == (200, {"paused": True}), paused.text
        assert await api.client.is_paused("jobs")
        assert (await api.http.get("/v1/queues/jobs/limits")).json() == {**NONE, "paused": True}
        resumed = await api.http.post("/v1/queues/jobs/resume", json={})
        assert (resumed.status_code, resumed.json()) == (200, {"paused": False})
        assert not await api.client.is_paused("jobs")

    api(scenario)


def test_a_schedule_is_paused_and_resumed(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.schedule("jobs", "nightly", every=3600)
        body = {"schedule": "nightly"}
        paused = await api.http.post("/v1/queues/jobs/pause", json=body)
        assert paused.json() == {"paused": True, "schedule": "nightly"}, paused.text
        [info] = await api.client.get_schedules("jobs")
        assert info.paused and not await api.client.is_paused("jobs")
        resumed = await api.http.post("/v1/queues/jobs/resume", json=body)
        assert resumed.json() == {"paused": False, "schedule": "nightly"}
        assert not (await api.client.get_schedules("jobs"))[0].paused
        for verb in ("pause", "resume"):
            missing = await api.http.post(f"/v1/queues/jobs/{verb}", json={"schedule": "nope"})
            assert missing.status_code == 404, missing.text
            assert missing.json()["error"]["code"] == "schedule_not_found"

    api(scenario)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/queues/jobs/pause", {"schedule": ""}),
        ("/v1/queues/jobs/pause", {"schedule": None}),
        ("/v1/queues/jobs/pause", {"schedule": 5}),
        ("/v1/queues/jobs/resume", {"schedule": "a\u0001b"}),
        ("/v1/queues/jobs/pause", {"group": "g", "schedule": "s"}),
        ("/v1/queues/jobs/pause", {"group": ""}),
        ("/v1/queues/jobs/resume", {"group": "a\u0001b"}),
        ("/v1/queues/jobs/pause", [1]),
    ],
)
def test_a_bad_pause_is_400_and_changes_nothing(
    api: ApiRunner, keys: Callable[[], list[bytes]], path: str, body: object
) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit("jobs", "x")
        before = keys()
        answer = await api.http.post(path, json=body)
        assert answer.status_code == 400, answer.text
        assert not await api.client.is_paused("jobs")
        assert keys() == before

    api(scenario)


def test_pausing_a_task_queue_is_409(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.enqueue_many("plain", ["a"])
        answer = await api.http.post("/v1/queues/plain/pause")
        assert answer.status_code == 409 and answer.json()["error"]["code"] == "wrong_queue_kind"
        assert not await api.client.is_paused("plain")

    api(scenario)
