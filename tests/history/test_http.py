"""``GET /v1/queues/{queue}/history`` (in process, over a real Redis): points
written with explicit minutes, and a bad ``since`` answered 400."""

from __future__ import annotations

import pytest

from tests.http.conftest import Api, ApiRunner
from worqr._core.history_model import WIDTH, encode


def tally(started: int, finished: int, failed: int, bucket: int) -> str:
    row = [0] * WIDTH
    row[0], row[1], row[3] = started, finished, failed
    row[5 + bucket] = finished + failed
    return encode(row)


def test_the_history_over_http(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        now = int(await api.client.internals.server_time())
        minute = now - now % 60
        tallies = [(minute - 120, tally(3, 3, 0, 10)), (minute, tally(2, 1, 1, 12))]
        await api.client.internals.record_history("jobs", tallies)
        answer = await api.http.get("/v1/queues/jobs/history", params={"since": 600})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert [p["time"] for p in body["points"]] == [minute - 120, minute]
        assert body["totals"]["started"] == 5 and body["totals"]["failed"] == 1
        assert body["totals"]["p50"] == pytest.approx(0.000125 * 2**10)
        assert body["points"][1]["p99"] == pytest.approx(0.000125 * 2**12)
        short = await api.http.get("/v1/queues/jobs/history", params={"since": 90})
        assert [p["time"] for p in short.json()["points"]] == [minute]
        default = await api.http.get("/v1/queues/jobs/history")
        assert default.json()["since"] == 3600

    api(scenario)


@pytest.mark.parametrize("since", ["0", "-1", "nan", "259201", "1h", ""])
def test_a_bad_since_is_a_400(api: ApiRunner, since: str) -> None:
    async def scenario(api: Api) -> None:
        answer = await api.http.get("/v1/queues/jobs/history", params={"since": since})
        assert answer.status_code == 400, answer.text
        assert "since" in answer.text

    api(scenario)
