"""`GET /v1/queues/{queue}/jobs/{id}/log`: the newest lines of a job's log,
``?limit=`` checked (400), an unknown job 404, and the bearer token required."""

from __future__ import annotations

import worqr
from tests.http.conftest import TOKEN, Api, ApiRunner
from tests.support.job_logs import logged_job

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_the_log_route_reads_the_newest_lines(
    api: ApiRunner, wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    id = logged_job(wq, worker, "q", [f"line {i}" for i in range(150)])
    silent = wq.submit("q", "p").id

    async def scenario(api: Api) -> None:
        answer = await api.http.get(f"/v1/queues/q/jobs/{id}/log")
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"id": id, "lines": [f"line {i}" for i in range(50, 150)]}
        answer = await api.http.get(f"/v1/queues/q/jobs/{id}/log", params={"limit": 2})
        assert answer.json()["lines"] == ["line 148", "line 149"]
        answer = await api.http.get(f"/v1/queues/q/jobs/{silent}/log")
        assert answer.json() == {"id": silent, "lines": []}
        missing = await api.http.get("/v1/queues/q/jobs/nope/log")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "job_not_found"
        for bad in ("0", "1001", "x", "1.5"):
            answer = await api.http.get(f"/v1/queues/q/jobs/{id}/log", params={"limit": bad})
            assert answer.status_code == 400, bad
            assert answer.json()["error"]["code"] == "invalid_parameter"
        await api.client.enqueue("tasks", "t")
        wrong = await api.http.get("/v1/queues/tasks/jobs/nope/log")
        assert wrong.status_code == 409

    api(scenario)


def test_the_log_route_needs_the_token(
    api: ApiRunner, wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    id = logged_job(wq, worker, "q", ["secret line"])

    async def scenario(api: Api) -> None:
        refused = await api.http.get(f"/v1/queues/q/jobs/{id}/log")
        assert refused.status_code == 401 and "secret line" not in refused.text
        answer = await api.http.get(f"/v1/queues/q/jobs/{id}/log", headers=AUTH)
        assert answer.json()["lines"] == ["secret line"]

    api(scenario, token=TOKEN)
