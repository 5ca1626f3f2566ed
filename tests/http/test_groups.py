"""Fair-share groups over HTTP: submit with ``group``, a page of groups
(``GET /v1/queues/{q}/groups``, through its cursor), a group's own limits
(``GET``/``PUT .../groups/{g}/limits``, as `configure_group`), a group's pause
(``POST .../pause`` and ``/resume`` with ``{"group": G}``); a bad group name is
a 400 ``invalid_group`` that writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest

from tests.http.conftest import TOKEN, Api, ApiRunner
from tests.http.test_limits import NONE


def test_submit_with_a_group_and_list_the_groups(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        made = await api.http.post("/v1/queues/jobs/jobs", json={"payload": "a", "group": "acme"})
        assert made.status_code == 201, made.text
        job = await api.http.get(made.headers["Location"])
        assert job.json()["group"] == "acme"
        for payload, group in (("b", "acme"), ("c", "a/b c")):
            answer = await api.http.post(
                "/v1/queues/jobs/jobs", json={"payload": payload, "group": group}
            )
            assert answer.status_code == 201, answer.text
        plain = await api.http.post("/v1/queues/jobs/jobs", json={"payload": "d"})
        assert "group" not in (await api.http.get(plain.headers["Location"])).json()
        page = await api.http.get("/v1/queues/jobs/groups")
        assert page.status_code == 200, page.text
        assert page.json()["cursor"] is None
        groups = sorted(page.json()["groups"], key=lambda g: g["name"])
        base = {"delayed": 0, "active": 0, "paused": False, "closed_until": None}
        limits = {"rate": None, "max_active": None, "limited": False}
        assert groups == [
            {"name": "a/b c", "queued": 1, **base, **limits},
            {"name": "acme", "queued": 2, **base, **limits},
        ]
        library = {info.name for info in (await api.client.get_groups("jobs"))[0]}
        assert library == {"acme", "a/b c"}

    api(scenario)


def test_groups_page_through_the_cursor(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        for i in range(300):
            await api.client.submit("jobs", "x", group=f"g{i:03}")
        names: list[str] = []
        cursor = None
        while True:
            params = {"limit": "50", **({"cursor": cursor} if cursor else {})}
            page = await api.http.get("/v1/queues/jobs/groups", params=params)
            assert page.status_code == 200, page.text
            names += [group["name"] for group in page.json()["groups"]]
            cursor = page.json()["cursor"]
            if cursor is None:
                break
        assert sorted(set(names)) == [f"g{i:03}" for i in range(300)]

    api(scenario)


def test_a_groups_limits_are_set_kept_and_removed(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        path = f"/v1/queues/jobs/groups/{quote('a/b', safe='')}/limits"
        assert (await api.http.get(path)).json() == NONE
        both = await api.http.put(path, json={"rate": {"starts": 5, "seconds": 2}, "max_active": 3})
        assert both.status_code == 200, both.text
        assert both.json() == {**NONE, "rate": {"starts": 5, "seconds": 2.0}, "max_active": 3}
        library = await api.client.get_limits("jobs", group="a/b")
        assert (library.rate, library.max_active) == ((5, 2.0), 3)
        capped = await api.http.put(path, json={"max_active": 4})
        assert capped.json()["rate"] == {"starts": 5, "seconds": 2.0}  # not given: kept
        await api.client.configure_queue("jobs", group_max_active=7)
        cleared = await api.http.put(path, json={"rate": None, "max_active": None})
        assert cleared.json() == {**NONE, "max_active": 7}  # the queue's, for every group
        assert (await api.http.get(path)).json() == {**NONE, "max_active": 7}
        assert (await api.client.get_groups("jobs"))[0] == []  # nothing of its own is left

    api(scenario)


def test_a_group_is_paused_and_resumed(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit("jobs", "x", group="acme")
        paused = await api.http.post("/v1/queues/jobs/pause", json={"group": "acme"})
        assert paused.json() == {"paused": True, "group": "acme"}, paused.text
        assert await api.client.is_paused("jobs", group="acme")
        assert not await api.client.is_paused("jobs")
        limits = (await api.http.get("/v1/queues/jobs/groups/acme/limits")).json()
        assert limits["paused"] is True
        [group] = (await api.http.get("/v1/queues/jobs/groups")).json()["groups"]
        assert (group["name"], group["paused"]) == ("acme", True)
        resumed = await api.http.post("/v1/queues/jobs/resume", json={"group": "acme"})
        assert resumed.json() == {"paused": False, "group": "acme"}
        assert not await api.client.is_paused("jobs", group="acme")

    api(scenario)


BAD_GROUP = "invalid_group"


@pytest.mark.parametrize(
    ("method", "path", "body", "code"),
    [
        ("POST", "/v1/queues/jobs/jobs", {"payload": "x", "group": ""}, BAD_GROUP),
        ("POST", "/v1/queues/jobs/jobs", {"payload": "x", "group": "a\u0001b"}, BAD_GROUP),
        ("POST", "/v1/queues/jobs/jobs", {"payload": "x", "group": "g" * 257}, BAD_GROUP),
        ("POST", "/v1/queues/jobs/jobs", {"payload": "x", "group": 5}, BAD_GROUP),
        ("POST", "/v1/queues/jobs/pause", {"group": ""}, BAD_GROUP),
        ("POST", "/v1/queues/jobs/resume", {"group": "a\u007fb"}, BAD_GROUP),
        ("PUT", "/v1/queues/jobs/groups/a%01b/limits", {"max_active": 1}, BAD_GROUP),
        ("PUT", f"/v1/queues/jobs/groups/{'g' * 257}/limits", {"max_active": 1}, BAD_GROUP),
        ("GET", "/v1/queues/jobs/groups/a%7Fb/limits", None, BAD_GROUP),
        ("PUT", "/v1/queues/jobs/groups/acme/limits", {"max_active": 0}, "invalid_option"),
        (
            "PUT",
            "/v1/queues/jobs/groups/acme/limits",
            {"rate": {"starts": 1, "seconds": 0}},
            "invalid_option",
        ),
        ("PUT", "/v1/queues/jobs/groups/acme/limits", {"group_rate": None}, "unknown_field"),
        ("GET", "/v1/queues/jobs/groups?limit=0", None, "invalid_parameter"),
        ("GET", "/v1/queues/jobs/groups?cursor=x", None, "invalid_parameter"),
        ("POST", "/v1/queues/jobs/pause", {"group": "acme", "schedule": "s"}, "invalid_option"),
        ("POST", "/v1/queues/jobs/jobs/cancel", {"group": ""}, "invalid_group"),
        ("POST", "/v1/queues/jobs/jobs/cancel", {"group": "a\u0007"}, "invalid_group"),
        ("GET", "/v1/queues/jobs/jobs?state=queued&group=", None, "invalid_group"),
    ],
)
def test_bad_input_is_400_and_writes_nothing(
    api: ApiRunner,
    keys: Callable[[], list[bytes]],
    method: str,
    path: str,
    body: object,
    code: str,
) -> None:
    """A bad group name, in a path or a body, is ``invalid_group``."""

    async def scenario(api: Api) -> None:
        await api.client.submit("jobs", "x", group="acme")
        before = keys()
        answer = await api.http.request(method, path, json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] == code
        assert keys() == before

    api(scenario)


def test_list_and_cancel_one_groups_jobs(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        for group in ("acme", "globex"):
            await api.client.submit_many("jobs", [f"{group}{i}" for i in range(3)], group=group)
        await api.client.submit_many("jobs", ["u0", "u1"])
        everything = await api.http.get("/v1/queues/jobs/jobs?state=queued&limit=1000")
        assert everything.status_code == 200, everything.text
        assert len(everything.json()["jobs"]) == 8  # the grouped ones too
        page = await api.http.get("/v1/queues/jobs/jobs?state=queued&group=acme")
        assert page.status_code == 200, page.text
        assert [job["group"] for job in page.json()["jobs"]] == ["acme"] * 3
        answer = await api.http.post("/v1/queues/jobs/jobs/cancel", json={"group": "acme"})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"cancelled": 3}
        counts = await api.client.count_jobs("jobs")
        assert (counts["queued"], counts["cancelled"]) == (5, 3)

    api(scenario)


def test_a_task_queue_refuses_group_limits_and_pause(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.enqueue_many("plain", ["a"])
        for method, path, body in (
            ("PUT", "/v1/queues/plain/groups/g/limits", {"max_active": 2}),
            ("POST", "/v1/queues/plain/pause", {"group": "g"}),
        ):
            answer = await api.http.request(method, path, json=body)
            assert answer.status_code == 409, answer.text
            assert answer.json()["error"]["code"] == "wrong_queue_kind"
        assert await api.client.count_tasks("plain") == 1

    api(scenario)


def test_group_routes_want_the_token(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        for method, path in (
            ("GET", "/v1/queues/jobs/groups"),
            ("GET", "/v1/queues/jobs/groups/acme/limits"),
            ("PUT", "/v1/queues/jobs/groups/acme/limits"),
        ):
            answer = await api.http.request(method, path, json={"max_active": 1})
            assert answer.status_code == 401, (method, path, answer.text)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        ok = await api.http.get("/v1/queues/jobs/groups", headers=auth)
        assert ok.status_code == 200, ok.text
        assert await api.client.get_queues() == []

    api(scenario, token=TOKEN)
