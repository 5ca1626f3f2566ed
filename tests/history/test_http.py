"""``GET /v1/queues/{queue}/history`` (in process, over a real Redis): points
written with explicit minutes, and a bad ``since`` answered 400."""

from __future__ import annotations

import asyncio

import httpx
import pytest

import worqr
from tests.http.conftest import BASE, Api, ApiRunner
from worqr._core.history_model import WIDTH, encode
from worqr.web import standalone_app


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


def test_the_view_sums_every_queue_for_the_front_page(redis_url: str, prefix: str) -> None:
    async def main() -> None:
        async with worqr.AsyncWorqr(redis_url, prefix=prefix) as client:
            now = int(await client.internals.server_time())
            minute = now - now % 60
            await client.submit("a", "x")  # the view knows the queues the mesh lists
            await client.submit("b", "x")
            await client.internals.record_history("a", [(minute, tally(2, 2, 0, 3))])
            await client.internals.record_history("b", [(minute, tally(1, 0, 1, 20))])
            transport = httpx.ASGITransport(app=standalone_app(client))
            async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
                mesh = (await http.get("/ui/api/history", params={"since": "1h"})).json()
                assert [p["started"] for p in mesh["points"]] == [3]
                assert mesh["totals"]["failed"] == 1 and mesh["now"] >= minute
                assert mesh["totals"]["p50"] == pytest.approx(0.000125 * 2**3)
                assert mesh["totals"]["p99"] == pytest.approx(0.000125 * 2**20)
                one = (await http.get("/ui/api/history", params={"queue": "b"})).json()
                assert one["queue"] == "b" and one["totals"]["started"] == 1
                bad = await http.get("/ui/api/history", params={"since": "1w"})
                assert bad.status_code == 400 and "since" in bad.text
                unknown = await http.get("/ui/api/history", params={"queue": "nope"})
                assert unknown.status_code == 404

    asyncio.run(main())
