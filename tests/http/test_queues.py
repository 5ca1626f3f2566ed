"""The mesh routes in-process: plain tasks (enqueue, cancel by payload), queues
with their counts, workers, and dead letters of both kinds of queue."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest

import worqr
from tests.http.conftest import Api, ApiRunner
from tests.support.waiting import async_wait_until, equals


def test_tasks_are_enqueued_in_order_and_cancelled_by_payload(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        one = await api.http.post("/v1/queues/t/tasks", json={"task": "a"})
        assert one.status_code == 201 and one.json() == {"enqueued": 1}
        many = await api.http.post("/v1/queues/t/tasks", json={"tasks": ["b", "a", "c"]})
        assert many.json() == {"enqueued": 3}
        raw = await api.http.post(
            "/v1/queues/t/tasks", json={"tasks_b64": [base64.b64encode(b"\xff").decode()]}
        )
        assert raw.json() == {"enqueued": 1}
        cancelled = await api.http.post("/v1/queues/t/tasks/cancel", json={"task": "a"})
        assert cancelled.json() == {"cancelled": 2}
        await api.client.start_worker()
        taken = await api.client.dequeue_many("t", 10)
        assert [p.task for p in taken] == ["b", "c", b"\xff"]

    api(scenario)


@pytest.mark.parametrize(
    "body",
    [
        {"tasks": []},
        {"tasks": "a"},
        {"tasks": ["a", 1]},
        {"task": "a", "tasks": ["b"]},
        {"task": "a", "task_b64": "YQ=="},
        {"tasks_b64": ["YQ==", "%%%"]},
        {"queue": "t"},
        {},
    ],
)
def test_a_bad_enqueue_is_400_and_writes_none_of_the_tasks(
    api: ApiRunner, keys: Callable[[], list[bytes]], body: object
) -> None:
    async def scenario(api: Api) -> None:
        answer = await api.http.post("/v1/queues/t/tasks", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] in ("invalid_option", "unknown_field")

    api(scenario)
    assert keys() == []


def test_tasks_on_a_job_queue_are_409(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit("jobs", "x")
        answer = await api.http.post("/v1/queues/jobs/tasks", json={"tasks": ["a", "b"]})
        assert answer.status_code == 409 and answer.json()["error"]["code"] == "wrong_queue_kind"
        assert (await api.client.count_jobs("jobs"))["queued"] == 1

    api(scenario)


def test_queues_list_the_counts_the_library_reads(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.enqueue_many("plain", ["a", "b", "c"])
        await api.client.submit_many("jobs", ["1", "2"])
        await api.client.submit("jobs", "later", delay=600)
        await api.client.start_worker()
        process = await api.client.dequeue("plain")
        assert process is not None
        await api.client.fail_process(process)
        await api.client.dequeue("plain")
        rows = {row["name"]: row for row in (await api.http.get("/v1/queues")).json()["queues"]}
        assert rows["plain"] == {
            "name": "plain",
            "kind": "tasks",
            "tasks": 1,
            "processes": 1,
            "failed": 1,
        }
        assert rows["jobs"]["kind"] == "jobs"
        assert rows["jobs"]["jobs"] == await api.client.count_jobs("jobs")
        assert rows["jobs"]["jobs"]["queued"] == 2 and rows["jobs"]["jobs"]["delayed"] == 1

    api(scenario)


def test_workers_show_id_host_pid_and_queues(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        id = await api.client.start_worker()
        await api.client.start_work("b")
        await api.client.start_work("a")
        info = await api.client.get_worker_info(id)
        workers = (await api.http.get("/v1/workers")).json()["workers"]
        assert workers == [
            {
                "id": id,
                "alive": True,
                "host": info["host"],
                "pid": int(info["pid"]),
                "queues": ["a", "b"],
            }
        ]

    api(scenario)


def test_task_dead_letters_are_counted_redriven_and_purged(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.start_worker()
        await api.client.enqueue_many("t", ["x", "y"])
        for _ in range(2):
            process = await api.client.dequeue("t")
            assert process is not None
            await api.client.fail_process(process)
        listed = (await api.http.get("/v1/queues/t/dead-letters")).json()
        assert listed == {"kind": "tasks", "count": 2}  # payloads only with --show-payloads
        # Its tasks all dead letters, it is still a task queue, not an empty job queue.
        (row,) = (await api.http.get("/v1/queues")).json()["queues"]
        assert row == {"name": "t", "kind": "tasks", "tasks": 0, "processes": 0, "failed": 2}
        redriven = await api.http.post("/v1/queues/t/dead-letters/redrive")
        assert redriven.json() == {"redriven": 2}
        assert await api.client.count_tasks("t") == 2 and await api.client.count_failed("t") == 0
        process = await api.client.dequeue("t")
        assert process is not None
        await api.client.fail_process(process)
        purged = await api.http.post("/v1/queues/t/dead-letters/purge")
        assert purged.json() == {"purged": 1} and await api.client.count_failed("t") == 0

    api(scenario)


def test_dead_letter_payloads_with_show_payloads(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.start_worker()
        await api.client.enqueue_many("t", ["x", "y", "z"])
        for _ in range(3):
            process = await api.client.dequeue("t")
            assert process is not None
            await api.client.fail_process(process)
        listed = (await api.http.get("/v1/queues/t/dead-letters?limit=2")).json()
        assert listed == {"kind": "tasks", "count": 3, "tasks": [{"task": "z"}, {"task": "y"}]}

    api(scenario, show_payloads=True)


def test_failed_jobs_are_dead_letters_redriven_and_purged(
    api: ApiRunner, job_worker: worqr.Worker
) -> None:
    async def scenario(api: Api) -> None:
        refs = await api.client.submit_many("work", ["fail:one", "fail:two"])
        for ref in refs:
            with pytest.raises(worqr.JobFailedError):
                await api.client.result("work", ref.id, timeout=10)
        listed = (await api.http.get("/v1/queues/work/dead-letters")).json()
        assert listed["kind"] == "jobs" and listed["cursor"] is None
        assert sorted(j["error"] for j in listed["jobs"]) == ["ValueError: one", "ValueError: two"]
        assert {j["id"] for j in listed["jobs"]} == {ref.id for ref in refs}
        redriven = await api.http.post("/v1/queues/work/dead-letters/redrive")
        assert redriven.json() == {"redriven": 2}
        # They run again (and fail again): attempts grow.
        await async_wait_until(lambda: equals(api.client.count_failed("work"), 2), timeout=10)
        assert all([(await api.client.get_job("work", r.id)).attempts == 2 for r in refs])  # type: ignore[union-attr]
        purged = await api.http.post("/v1/queues/work/dead-letters/purge")
        assert purged.json() == {"purged": 2}
        assert all([await api.client.get_job("work", r.id) is None for r in refs])

    api(scenario)


def test_a_queue_with_a_waiting_flow_parent_lists_its_waiting_count(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit("plain", "x")
        flow = worqr.FlowJob("report", "q3", children=[worqr.FlowJob("part", "1")])
        await api.client.submit_flow(flow)
        answer = await api.http.get("/v1/queues")
        assert answer.status_code == 200
        rows = {row["name"]: row for row in answer.json()["queues"]}
        assert rows["report"]["jobs"]["waiting"] == 1
        assert "waiting" not in rows["plain"]["jobs"]  # counted once a queue has such jobs
        assert rows["part"]["jobs"]["queued"] == 1

    api(scenario)
