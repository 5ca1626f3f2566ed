"""The job routes in-process: submit with every option, status, result,
cancel, retry, lists with a cursor; every bad request answered 400 with a
stable code and nothing written."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

import worqr
from tests.http.conftest import Api, ApiRunner
from tests.support.waiting import async_wait_until


def test_submit_answers_201_with_the_id_and_the_job_is_queued(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        answer = await api.http.post("/v1/queues/q/jobs", json={"payload": "secret-payload"})
        assert answer.status_code == 201, answer.text
        id = answer.json()["id"]
        assert answer.json() == {"id": id, "duplicate": False}
        assert answer.headers["location"] == f"/v1/queues/q/jobs/{id}"
        job = await api.client.get_job("q", id)
        assert job is not None and job.state == "queued" and job.payload == "secret-payload"
        status = await api.http.get(answer.headers["location"])
        assert status.status_code == 200
        record = status.json()
        assert record["id"] == id and record["state"] == "queued" and record["attempts"] == 0
        # Payloads stay out of status and lists without --show-payloads.
        assert "payload" not in record and "secret-payload" not in status.text
        listed = await api.http.get("/v1/queues/q/jobs", params={"state": "queued"})
        assert [j["id"] for j in listed.json()["jobs"]] == [id]
        assert "secret-payload" not in listed.text

    api(scenario)


def test_show_payloads_puts_payloads_and_results_in_records(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        text = await api.http.post("/v1/queues/q/jobs", json={"payload": "visible"})
        raw = await api.http.post(
            "/v1/queues/q/jobs", json={"payload_b64": base64.b64encode(b"\x00\xff").decode()}
        )
        first = (await api.http.get(f"/v1/queues/q/jobs/{text.json()['id']}")).json()
        second = (await api.http.get(f"/v1/queues/q/jobs/{raw.json()['id']}")).json()
        assert first["payload"] == "visible"
        assert base64.b64decode(second["payload_b64"]) == b"\x00\xff"  # bytes arrive as bytes
        assert (await api.client.get_job("q", raw.json()["id"])).payload == b"\x00\xff"  # type: ignore[union-attr]

    api(scenario, show_payloads=True)


def test_a_live_duplicate_answers_200_and_creates_nothing(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        first = await api.http.post("/v1/queues/q/jobs", json={"payload": "a", "id": "order-7"})
        again = await api.http.post("/v1/queues/q/jobs", json={"payload": "b", "id": "order-7"})
        assert first.status_code == 201 and again.status_code == 200
        assert again.json() == {"id": "order-7", "duplicate": True}
        unique = [
            await api.http.post("/v1/queues/q/jobs", json={"payload": "sync", "unique": True})
            for _ in range(2)
        ]
        assert [r.status_code for r in unique] == [201, 200]
        assert unique[1].json() == {"id": unique[0].json()["id"], "duplicate": True}
        assert (await api.client.count_jobs("q"))["queued"] == 2

    api(scenario)


def test_submit_options_reach_the_job(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        now = await api.client.server_time()
        delayed = await api.http.post("/v1/queues/q/jobs", json={"payload": "d", "delay": 120})
        at = await api.http.post("/v1/queues/q/jobs", json={"payload": "a", "at": now + 600})
        job = await api.client.get_job("q", delayed.json()["id"])
        assert job is not None and job.state == "delayed" and job.due is not None
        assert job.due - job.created == pytest.approx(120, abs=0.01)
        job = await api.client.get_job("q", at.json()["id"])
        assert job is not None and job.due == pytest.approx(now + 600, abs=0.01)
        low = await api.http.post("/v1/queues/p/jobs", json={"payload": "low"})
        high = await api.http.post(
            "/v1/queues/p/jobs",
            json={
                "payload": "high",
                "priority": 5,
                "retries": 2,
                "timeout": 30,
                "backoff": {"base": 0.5, "factor": 3},
                "result_ttl": 60,
            },
        )
        assert high.status_code == 201, high.text
        page = (await api.http.get("/v1/queues/p/jobs?state=queued")).json()
        assert [j["id"] for j in page["jobs"]] == [high.json()["id"], low.json()["id"]]

    api(scenario)


def test_a_dedup_key_answers_with_its_job(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        body = {"payload": "v1", "delay": 60, "dedup": {"key": "doc-7", "mode": "debounce"}}
        first = await api.http.post("/v1/queues/q/jobs", json=body)
        again = await api.http.post("/v1/queues/q/jobs", json={**body, "payload": "v2"})
        assert first.status_code == 201 and again.status_code == 200, again.text
        assert again.json() == {"id": first.json()["id"], "duplicate": True}
        job = await api.client.get_job("q", first.json()["id"])
        assert job is not None and (job.state, job.payload) == ("delayed", "v2")
        throttled = {"payload": "t", "dedup": {"key": "digest", "ttl": 60}}
        answers = [await api.http.post("/v1/queues/q/jobs", json=throttled) for _ in range(2)]
        assert [answer.status_code for answer in answers] == [201, 200]

    api(scenario)


BAD_SUBMITS: list[tuple[str, Any, str]] = [
    ("q", {"payload": "x", "colour": "red"}, "unknown_field"),
    ("q", {"payload": "x", "backoff": {"base": 1, "curve": 2}}, "unknown_field"),
    ("q", {}, "invalid_option"),
    ("q", {"payload": 7}, "invalid_option"),
    ("q", {"payload": "x", "payload_b64": "eA=="}, "invalid_option"),
    ("q", {"payload_b64": "not base64!"}, "invalid_option"),
    ("q", b'{"payload": "\\ud800"}', "invalid_json"),  # a lone surrogate: not I-JSON
    ("q", {"payload": "x", "delay": 1e308}, "invalid_option"),
    ("q", {"payload": "x", "delay": 10**400}, "invalid_option"),  # too large for a float
    ("q", {"payload": "x", "delay": 10**30}, "invalid_option"),
    ("q", {"payload": "x", "at": 1e308}, "invalid_option"),
    ("q", {"payload": "x", "timeout": 1e308}, "invalid_option"),
    ("q", {"payload": "x", "result_ttl": 1e308}, "invalid_option"),
    ("q", {"payload": "x", "backoff": 1e308}, "invalid_option"),
    ("q", {"payload": "x", "backoff": {"max": 1e308}}, "invalid_option"),
    ("q", {"payload": "x", "retries": 2**63}, "invalid_option"),
    ("q", {"payload": "x", "delay": None}, "invalid_option"),
    ("q", {"payload": "x", "priority": "high"}, "invalid_option"),
    ("q", {"payload": "x", "priority": 1.5}, "invalid_option"),
    ("q", {"payload": "x", "priority": 10**9}, "invalid_option"),
    ("q", {"payload": "x", "unique": "yes"}, "invalid_option"),
    ("q", {"payload": "x", "delay": -1}, "invalid_option"),
    ("q", {"payload": "x", "delay": 1, "at": 2}, "invalid_option"),
    ("q", {"payload": "x", "retries": -1}, "invalid_option"),
    ("q", {"payload": "x", "timeout": 0}, "invalid_option"),
    ("q", {"payload": "x", "backoff": {"jitter": 2}}, "invalid_option"),
    ("q", {"payload": "x", "id": 12}, "invalid_option"),
    ("q", {"payload": "x", "id": "x" * 257}, "invalid_option"),
    ("q", {"payload": "x", "id": "a\nb"}, "invalid_option"),
    ("q", {"payload": "x", "dedup": {"key": "k"}}, "invalid_dedup"),  # throttle: needs a ttl
    ("q", {"payload": "x", "dedup": {"key": "k", "ttl": 1, "mode": "debounce"}}, "invalid_dedup"),
    ("q", {"payload": "x", "dedup": {"key": "k", "mode": "latest"}}, "invalid_dedup"),
    ("q", {"payload": "x", "dedup": {"key": "", "mode": "debounce"}}, "invalid_dedup"),
    ("q", {"payload": "x", "dedup": {"key": "k", "ttl": -1}}, "invalid_dedup"),
    ("q", {"payload": "x", "dedup": {"key": "k", "ttl": None}}, "invalid_dedup"),
    ("q", {"payload": "x", "dedup": "k"}, "invalid_dedup"),
    ("q", {"payload": "x", "id": "a", "dedup": {"key": "k", "ttl": 1}}, "invalid_dedup"),
    ("q", {"payload": "x", "unique": True, "dedup": {"key": "k", "ttl": 1}}, "invalid_dedup"),
    ("q", {"payload": "x", "dedup": {"key": "k", "ttl": 1, "colour": 1}}, "unknown_field"),
    ("a{b}", {"payload": "x"}, "invalid_queue_name"),
    ("q", b'{"payload": "x"', "invalid_json"),
    ("q", b'["payload"]', "invalid_json"),
    ("q", b'{"payload": "x", "delay": NaN}', "invalid_json"),
    ("q", b"\xff\xfe", "invalid_json"),
]


@pytest.mark.parametrize(("queue", "body", "code"), BAD_SUBMITS)
def test_a_bad_submit_is_400_with_its_code_and_writes_nothing(
    api: ApiRunner, keys: Callable[[], list[bytes]], queue: str, body: Any, code: str
) -> None:
    async def scenario(api: Api) -> None:
        url = f"/v1/queues/{queue}/jobs"
        if isinstance(body, bytes):
            answer = await api.http.post(url, content=body)
        else:
            answer = await api.http.post(url, json=body)
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["code"] == code and error["message"]
        assert set(answer.json()) == {"error"} and set(error) == {"code", "message"}

    api(scenario)
    assert keys() == []


def test_unknown_jobs_are_404_on_every_job_route(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.http.post("/v1/queues/q/jobs", json={"payload": "x"})  # a job queue
        for method, path in [
            ("GET", ""),
            ("POST", "/cancel"),
            ("POST", "/retry"),
            ("GET", "/result"),
            ("GET", "/events"),
        ]:
            answer = await api.http.request(method, f"/v1/queues/q/jobs/nope{path}")
            assert answer.status_code == 404, (method, path, answer.text)
            assert answer.json()["error"]["code"] == "job_not_found"
            assert "nope" in answer.json()["error"]["message"]

    api(scenario)


def test_job_routes_on_a_task_queue_are_409_and_write_nothing(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.enqueue("plain", "t1")
        for method, path, body in [
            ("POST", "", {"payload": "x"}),
            ("GET", "/j1", None),
            ("POST", "/j1/cancel", None),
            ("GET", "/j1/result", None),
            ("GET", "?state=queued", None),
        ]:
            answer = await api.http.request(method, f"/v1/queues/plain/jobs{path}", json=body)
            assert answer.status_code == 409, (method, path, answer.text)
            assert answer.json()["error"]["code"] == "wrong_queue_kind"
        assert await api.client.count_tasks("plain") == 1
        with pytest.raises(worqr.WrongQueueKindError):
            await api.client.count_jobs("plain")

    api(scenario)


def test_result_waits_for_the_end_and_says_how_it_ended(
    api: ApiRunner, job_worker: worqr.Worker
) -> None:
    async def scenario(api: Api) -> None:
        async def submit(payload: str) -> str:
            answer = await api.http.post("/v1/queues/work/jobs", json={"payload": payload})
            return str(answer.json()["id"])

        done = await api.http.get(f"/v1/queues/work/jobs/{await submit('text:hi')}/result?wait=10")
        assert done.status_code == 200
        assert done.json()["state"] == "finished" and done.json()["result"] == "hi"
        raw = await api.http.get(f"/v1/queues/work/jobs/{await submit('bytes:ab')}/result?wait=10")
        assert base64.b64decode(raw.json()["result_b64"]) == b"ab\xff"
        failed = await api.http.get(
            f"/v1/queues/work/jobs/{await submit('fail:boom')}/result?wait=10"
        )
        assert failed.status_code == 200
        assert failed.json() == {
            "id": failed.json()["id"],
            "state": "failed",
            "error": "ValueError: boom",
        }
        held = await submit("hold")
        pending = await api.http.get(f"/v1/queues/work/jobs/{held}/result?wait=0.2")
        assert pending.status_code == 202 and pending.json()["state"] in ("queued", "active")
        assert (await api.http.post(f"/v1/queues/work/jobs/{held}/cancel")).status_code == 200
        ended = await api.http.get(f"/v1/queues/work/jobs/{held}/result")
        assert ended.json() == {"id": held, "state": "cancelled", "error": None}

    api(scenario)


@pytest.mark.parametrize("wait", ["-1", "61", "soon", "nan"])
def test_result_wait_is_bounded(api: ApiRunner, wait: str) -> None:
    async def scenario(api: Api) -> None:
        answer = await api.http.get(f"/v1/queues/q/jobs/j/result?wait={wait}")
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_parameter"

    api(scenario)


def test_cancel_and_retry_answer_409_when_they_do_not_apply(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        ref = await api.client.submit("q", "x", id="j", delay=600)
        assert (await api.http.post(f"/v1/queues/q/jobs/{ref.id}/retry")).status_code == 409
        cancelled = await api.http.post(f"/v1/queues/q/jobs/{ref.id}/cancel")
        assert cancelled.json() == {"id": "j", "state": "cancelled"}
        again = await api.http.post(f"/v1/queues/q/jobs/{ref.id}/cancel")
        assert again.status_code == 409 and again.json()["error"]["code"] == "not_cancellable"
        retried = await api.http.post(f"/v1/queues/q/jobs/{ref.id}/retry")
        assert retried.json() == {"id": "j", "state": "queued"}
        assert (await api.client.get_job("q", "j")).state == "queued"  # type: ignore[union-attr]
        twice = await api.http.post(f"/v1/queues/q/jobs/{ref.id}/retry")
        assert twice.status_code == 409 and twice.json()["error"]["code"] == "not_retryable"

    api(scenario)


def test_jobs_by_state_page_with_a_cursor(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        refs = await api.client.submit_many("q", [str(n) for n in range(5)], delay=600)
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            params = {"state": "delayed", "limit": "2", **({"cursor": cursor} if cursor else {})}
            page = (await api.http.get("/v1/queues/q/jobs", params=params)).json()
            assert len(page["jobs"]) <= 2
            seen += [job["id"] for job in page["jobs"]]
            pages += 1
            cursor = page["cursor"]
            if cursor is None:
                break
        assert seen == [ref.id for ref in refs] and pages == 3
        for bad in ("state=lost", "state=queued&limit=0", "state=queued&limit=1001", "limit=5"):
            answer = await api.http.get(f"/v1/queues/q/jobs?{bad}")
            assert (
                answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_parameter"
            )
        bad_cursor = await api.http.get("/v1/queues/q/jobs?state=delayed&cursor=zz")
        assert bad_cursor.status_code == 400

    api(scenario)


def test_waiting_jobs_are_listed(api: ApiRunner) -> None:
    """A flow parent waits for its children: `state=waiting` lists it."""

    async def scenario(api: Api) -> None:
        kids = [worqr.FlowJob("kids", "1")]
        flow = await api.client.submit_flow(worqr.FlowJob("q", "parent", children=kids))
        page = (await api.http.get("/v1/queues/q/jobs", params={"state": "waiting"})).json()
        assert [(job["id"], job["state"]) for job in page["jobs"]] == [(flow.last[1], "waiting")]
        assert page["cursor"] is None

    api(scenario)


def test_a_finished_job_is_read_over_http_as_the_library_reads_it(
    api: ApiRunner, job_worker: worqr.Worker
) -> None:
    async def scenario(api: Api) -> None:
        ref = await api.client.submit("work", "text:done")
        await async_wait_until(lambda: api.client.get_job("work", ref.id), timeout=10)
        await api.client.result("work", ref.id, timeout=10)
        record = (await api.http.get(f"/v1/queues/work/jobs/{ref.id}")).json()
        job = await api.client.get_job("work", ref.id)
        assert job is not None
        assert record["state"] == "finished" and record["attempts"] == job.attempts == 1
        assert (record["created"], record["started"], record["ended"]) == (
            job.created,
            job.started,
            job.ended,
        )
        assert "result" not in record  # results: from the result route, or --show-payloads

    api(scenario)


def test_names_holding_a_slash_or_a_percent_work_in_every_path(api: ApiRunner) -> None:
    """Names are data: a queue or id holding '/' is sent as %2F (as `Location`
    gives it) and reaches the queue of that exact name; '%2F' in a name is '%252F'."""
    queue, id = "team/a%b é", "order/7%x"
    path = f"/v1/queues/{quote(queue, safe='')}"

    async def scenario(api: Api) -> None:
        answer = await api.http.post(f"{path}/jobs", json={"payload": "p", "id": id})
        assert answer.status_code == 201, answer.text
        location = answer.headers["location"]
        assert location == f"{path}/jobs/{quote(id, safe='')}"
        status = await api.http.get(location)
        assert status.status_code == 200, status.text
        assert (status.json()["queue"], status.json()["id"]) == (queue, id)
        listed = await api.http.get(f"{path}/jobs", params={"state": "queued"})
        assert [job["id"] for job in listed.json()["jobs"]] == [id]
        assert (await api.http.post(f"{location}/cancel")).json() == {
            "id": id,
            "state": "cancelled",
        }
        retried = await api.http.post(f"{location}/retry")
        assert retried.json() == {"id": id, "state": "queued"}
        assert (await api.client.get_job(queue, id)).state == "queued"  # type: ignore[union-attr]
        limits = await api.http.put(f"{path}/limits", json={"max_active": 3})
        assert limits.status_code == 200 and limits.json()["max_active"] == 3
        # A name holding the characters "%2F" is another queue than one holding "/".
        literal = await api.http.post("/v1/queues/a%252Fb/tasks", json={"task": "t"})
        assert literal.status_code == 201, literal.text
        assert await api.client.count_tasks("a%2Fb") == 1
        assert await api.client.count_tasks("a/b") == 0

    api(scenario)
