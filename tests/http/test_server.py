"""`worqr http` as a real process: uvicorn on a free loopback port, talked to
over TCP (a submit, its result, a live event stream, SIGTERM), and the checks
that refuse to start it."""

from __future__ import annotations

import json
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.http.conftest import TOKEN, make_job_worker
from tests.support import ROOT
from tests.support.cli import assert_one_line_error, cli_env, run_cli, start_cli
from tests.support.processes import stop
from tests.support.workers import Runner
from worqr._cli.http_server import _listen

SECRET = "payload-9f8e7d6c5b4a"


def first_line(process: subprocess.Popen[bytes], timeout: float = 20) -> str:
    """The first line ``process`` prints on stdout, within ``timeout`` seconds."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise AssertionError(f"no line on stdout within {timeout} s")
    return process.stdout.readline().decode()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token.txt"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def served(
    redis_url: str, prefix: str, token_file: Path, tmp_path: Path
) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """`worqr http --port 0` with a token, its URL, and its log file (stderr)."""
    log = tmp_path / "server.log"
    with open(log, "wb") as err:
        process = start_cli(
            "http",
            "--port",
            "0",
            "--token-file",
            str(token_file),
            "--url",
            redis_url,
            "--prefix",
            prefix,
            stderr=err,
        )
    try:
        line = first_line(process)
        assert line.startswith("worqr http: serving on http://127.0.0.1:"), line
        yield line.split()[4], process, log
    finally:
        stop(process)


@pytest.mark.slow
def test_the_server_answers_over_tcp_streams_events_and_stops_on_sigterm(
    served: tuple[str, subprocess.Popen[bytes], Path], redis_url: str, prefix: str
) -> None:
    url, process, log = served
    runner = Runner()
    runner.start(make_job_worker(redis_url, prefix))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        with httpx.Client(base_url=url, headers=auth, timeout=20) as http:
            assert httpx.get(f"{url}/v1/queues").status_code == 401  # no token
            page = httpx.get(f"{url}/")  # the web view, served by the same application
            assert page.status_code == 200 and "text/html" in page.headers["content-type"]
            overview = http.get("/ui/api/overview")
            assert overview.status_code == 200 and "queues" in overview.json()
            assert httpx.post(f"{url}/ui/api/purge", json={"queue": "work"}).status_code == 401
            ref = http.post("/v1/queues/work/jobs", json={"payload": f"text:{SECRET}"})
            assert ref.status_code == 201
            done = http.get(f"/v1/queues/work/jobs/{ref.json()['id']}/result?wait=10")
            assert done.json()["result"] == SECRET
            # A name holding '/' goes through uvicorn's path decoding too (as %2F).
            slashed = http.post("/v1/queues/team%2Fa/jobs", json={"payload": "p", "id": "x/1"})
            assert slashed.headers["location"] == "/v1/queues/team%2Fa/jobs/x%2F1"
            assert http.get(slashed.headers["location"]).json()["queue"] == "team/a"
            # Keep-alive responses are not held back by Nagle against delayed
            # ACKs (~40 ms each when the listening socket did not say TCP).
            times = []
            for _ in range(9):
                began = time.perf_counter()
                http.get("/openapi.json").raise_for_status()
                times.append(time.perf_counter() - began)
            assert sorted(times)[4] < 0.03, times
            held = http.post("/v1/queues/work/jobs", json={"payload": "hold"}).json()["id"]
            seen: list[str] = []
            with http.stream("GET", f"/v1/queues/work/jobs/{held}/events") as stream:
                for line in stream.iter_lines():
                    if line.startswith("event: "):
                        seen.append(line[7:])
                    if seen and seen[-1] == "progress" and line.startswith("data: "):
                        # Progress arrived over the wire while the job runs: end it.
                        assert json.loads(line[6:]) == {"id": held, "progress": "holding"}
                        assert http.post(f"/v1/queues/work/jobs/{held}/cancel").status_code == 200
                    if line.startswith("data: ") and seen[-1] == "end":
                        assert json.loads(line[6:])["state"] == "cancelled"
            # The stream ended by itself after "end".
            assert seen[0] == "state" and "progress" in seen and seen[-1] == "end"
    finally:
        runner.stop_all()
    process.send_signal(signal.SIGTERM)
    assert process.wait(15) == 0
    assert process.stdout is not None
    output = process.stdout.read().decode() + log.read_text()
    assert "POST /v1/queues/work/jobs HTTP/1.1" in output  # the access log is on
    assert SECRET not in output and TOKEN not in output


def test_a_non_loopback_host_without_a_token_is_refused(redis_url: str) -> None:
    result = run_cli("http", "--host", "0.0.0.0", "--port", "1", "--url", redis_url)
    assert_one_line_error(result, 2, "--host 0.0.0.0 is not a loopback address", "--token-file")


def test_a_bad_token_file_is_refused_without_showing_it(tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_text("hunter2\n")
    result = run_cli("http", "--token-file", str(short))
    assert_one_line_error(result, 2, "--token-file", "at least 16")
    assert "hunter2" not in result.stderr
    result = run_cli("http", "--token-file", str(tmp_path / "missing"))
    assert_one_line_error(result, 2, "--token-file", "No such file")


def test_a_taken_port_is_one_line(redis_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("http", "--port", str(port), "--url", redis_url)
    assert_one_line_error(result, 1, f"cannot listen on 127.0.0.1:{port}")


def test_without_the_extra_it_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['starlette'] = sys.modules['uvicorn'] = None\n"
        "import worqr, worqr.cli\n"
        "assert worqr.cli.main(['status', '--help']) == 0\n"
        "sys.exit(worqr.cli.main(['http']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=cli_env()
    )
    assert result.returncode == 1, result.stderr
    assert "pip install 'worqr[http]'" in result.stderr and "Traceback" not in result.stderr


def test_the_library_and_the_command_line_do_not_import_the_extra() -> None:
    code = (
        "import sys, worqr, worqr.cli\n"
        "worqr.cli.build_parser().parse_args(['http', '--port', '0'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.strip() == "[]", result.stderr


def test_the_listening_socket_says_tcp_so_connections_get_nodelay() -> None:
    with _listen("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR)
