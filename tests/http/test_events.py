"""A job's Server-Sent Events in-process: state, progress, then end, and the
stream closes at the end. `Stream` calls the ASGI app directly, so a test
sees each event as it is sent (httpx's ASGI transport hands a body over
only once it is complete)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import worqr
from tests.http.conftest import Api, ApiRunner
from tests.support.waiting import async_wait_until


class Stream:
    """One GET of ``path`` on ``app``, its body collected as it is sent."""

    def __init__(self, app: Any, path: str) -> None:
        self.status: int | None = None
        self.body = b""
        self.requested = False
        self.gone = asyncio.Event()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1:8080")],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8080),
        }
        self.task = asyncio.create_task(app(scope, self.receive, self.send))

    async def receive(self) -> dict[str, Any]:
        if not self.requested:
            self.requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.gone.wait()  # the client goes away when the test says
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")

    def events(self) -> list[tuple[str, dict[str, Any]]]:
        return parse_events(self.body.decode())

    def names(self) -> list[str]:
        return [name for name, _ in self.events()]


def parse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_a_jobs_stream_shows_its_progress_as_it_comes_and_ends_when_cancelled(
    api: ApiRunner, job_worker: worqr.Worker
) -> None:
    async def scenario(api: Api) -> None:
        ref = await api.client.submit("work", "hold")
        stream = Stream(api.app, f"/v1/queues/work/jobs/{ref.id}/events")
        # Progress is streamed while the job runs, before any end.
        await async_wait_until(lambda: "progress" in stream.names(), timeout=10)
        assert stream.status == 200 and "end" not in stream.names()
        await api.client.cancel_job("work", ref.id)
        await asyncio.wait_for(stream.task, 10)  # the stream closes at the end
        events = stream.events()
        names = [name for name, _ in events]
        assert names[0] == "state" and names[-1] == "end" and names.count("end") == 1
        assert ("progress", {"id": ref.id, "progress": "holding"}) in events
        assert events[-1][1]["state"] == "cancelled" and events[-1][1]["id"] == ref.id
        states = [data["state"] for name, data in events if name == "state"]
        assert states[-1] == "active" and len(states) == len(set(states))  # changes only

    api(scenario)


def test_a_finished_jobs_stream_is_one_end_event(api: ApiRunner, job_worker: worqr.Worker) -> None:
    async def scenario(api: Api) -> None:
        ref = await api.client.submit("work", "text:ok")
        await api.client.result("work", ref.id, timeout=10)
        answer = await api.http.get(f"/v1/queues/work/jobs/{ref.id}/events")
        assert answer.headers["content-type"].startswith("text/event-stream")
        ((name, data),) = parse_events(answer.text)
        assert name == "end" and data["state"] == "finished" and "result" not in data

    api(scenario)


def test_the_end_arrives_without_waiting_for_the_next_read(
    api: ApiRunner, job_worker: worqr.Worker
) -> None:
    async def scenario(api: Api) -> None:
        ref = await api.client.submit("work", "hold")
        await async_wait_until(lambda: _state_is(api, ref.id, "active"), timeout=10)
        stream = Stream(api.app, f"/v1/queues/work/jobs/{ref.id}/events")
        await async_wait_until(lambda: "state" in stream.names(), timeout=10)
        loop = asyncio.get_running_loop()
        cancelled_at = loop.time()
        await api.client.cancel_job("work", ref.id)
        await asyncio.wait_for(stream.task, 10)
        # The stream reads the job every 30 s here: only the end notification
        # can have ended it this soon.
        assert loop.time() - cancelled_at < 5
        assert stream.events()[-1][1]["state"] == "cancelled"

    api(scenario, events_interval=30.0)


def test_a_client_that_leaves_ends_its_stream(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        ref = await api.client.submit("q", "x", delay=600)
        stream = Stream(api.app, f"/v1/queues/q/jobs/{ref.id}/events")
        await async_wait_until(lambda: stream.names() == ["state"], timeout=10)
        stream.gone.set()
        await asyncio.wait_for(stream.task, 10)
        assert stream.names() == ["state"]

    api(scenario)


async def _state_is(api: Api, id: str, state: str) -> bool:
    job = await api.client.get_job("work", id)
    return job is not None and job.state == state
