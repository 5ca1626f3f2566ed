"""`worqr http` continues a request's W3C ``traceparent``: a real `worqr http`
process with no SDK configured carries it to the job's record as it came, and an
app whose process has an SDK makes its PRODUCER span under it. Either way the
run's span (in a real worker) is in the request's trace."""

from __future__ import annotations

import asyncio
import selectors
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import worqr
from tests.support import ROOT
from tests.support.cli import cli_env, start_cli
from tests.support.job_mesh import Mesh
from tests.support.processes import stop
from tests.tracing.spans import raw_text
from tests.tracing.test_traces import SECRET, spans_of
from worqr.http import create_app

pytestmark = pytest.mark.slow

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
HEADERS = {"traceparent": f"00-{TRACE_ID}-{SPAN_ID}-01", "tracestate": "vendor=value"}


# `python -m worqr` as if the opentelemetry API were not installed at all.
WITHOUT_API = (
    "import runpy, sys; sys.modules['opentelemetry'] = None; "
    "runpy.run_module('worqr', run_name='__main__')"
)


@pytest.fixture(params=["api", "no-api"])
def served(
    request: pytest.FixtureRequest, redis_url: str, prefix: str, tmp_path: Path
) -> Iterator[str]:
    """`worqr http --port 0` (no token, loopback) of the test's mesh: its URL.
    Its process configures no SDK; with "no-api" it cannot import OpenTelemetry."""
    args = ["http", "--port", "0", "--url", redis_url, "--prefix", prefix]
    with open(tmp_path / "server.log", "wb") as err:
        if request.param == "api":
            process = start_cli(*args, stderr=err)
        else:
            process = subprocess.Popen(
                [sys.executable, "-c", WITHOUT_API, *args],
                stdout=subprocess.PIPE,
                stderr=err,
                env=cli_env(),
                cwd=ROOT,
            )
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            assert selector.select(20), "worqr http printed nothing"
        line = process.stdout.readline().decode()
        assert line.startswith("worqr http: serving on http://127.0.0.1:"), line
        yield line.split()[4]
    finally:
        stop(process)


def test_a_server_without_an_sdk_carries_the_requests_trace_to_the_run(
    mesh: Mesh, spans_dir: Path, served: str
) -> None:
    mesh.start(processes=1)
    answer = httpx.post(
        f"{served}/v1/queues/step/jobs", json={"payload": SECRET}, headers=HEADERS, timeout=20
    )
    assert answer.status_code == 201, answer.text
    id = answer.json()["id"]
    assert mesh.client.result("step", id, timeout=15) == SECRET + "+"
    [run] = spans_of(spans_dir, 1, kind="CONSUMER")
    assert (run.trace_id, run.parent_id) == (TRACE_ID, SPAN_ID)
    assert "vendor" in run.trace_state  # the tracestate came along too
    assert run.attributes["messaging.message.id"] == id
    assert not spans_of(spans_dir, 0, kind="PRODUCER")  # that process exports nothing
    assert SECRET not in raw_text(spans_dir)


def test_a_server_with_an_sdk_makes_its_producer_span_in_the_requests_trace(
    mesh: Mesh, spans_dir: Path, redis_url: str, prefix: str
) -> None:
    mesh.start(processes=1)

    async def submit() -> str:
        async with worqr.AsyncWorqr(redis_url, prefix=prefix) as client:
            app = create_app(client, token=None, show_payloads=False)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                answer = await http.post(
                    "/v1/queues/step/jobs", json={"payload": SECRET}, headers=HEADERS
                )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    id = asyncio.run(submit())
    assert mesh.client.result("step", id, timeout=15) == SECRET + "+"
    [send] = spans_of(spans_dir, 1, kind="PRODUCER")
    assert (send.trace_id, send.parent_id) == (TRACE_ID, SPAN_ID)
    assert send.attributes["messaging.message.id"] == id
    [run] = spans_of(spans_dir, 1, kind="CONSUMER")
    assert (run.trace_id, run.parent_id) == (TRACE_ID, send.span_id)
    assert SECRET not in raw_text(spans_dir)
