"""`worqr demo --keep`: after its summary the demo's mesh, Redis, metrics and
web view stay up, their URLs printed, until Ctrl-C; then it all stops."""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import threading
import urllib.error
import urllib.request

import pytest

from tests.support.cli import start_cli
from tests.support.processes import pid_alive, stop
from tests.support.waiting import wait_until


def lines_of(process: subprocess.Popen[bytes]) -> queue.Queue[str]:
    """The process's stdout, line by line, read on a thread (so a test can wait
    for a line with a deadline)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            lines.put(raw.decode("utf-8", "replace"))

    threading.Thread(target=read, daemon=True).start()
    return lines


def read_until(lines: queue.Queue[str], pattern: str, seen: list[str], timeout: float) -> str:
    found: list[str] = []

    def check() -> bool:
        while not lines.empty():
            line = lines.get_nowait()
            seen.append(line)
            if match := re.search(pattern, line):
                found.append(match.group(1))
        return bool(found)

    wait_until(check, timeout=timeout, interval=0.1, message=f"a line matching {pattern!r}")
    return found[0]


def fetch(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode("utf-8")


@pytest.mark.slow
def test_demo_keep_serves_the_view_until_ctrl_c() -> None:
    process = start_cli("demo", "--keep", "--tasks", "200", "--processes", "2")
    try:
        lines, seen = lines_of(process), []
        redis_pid = int(read_until(lines, r"embedded redis-server \(pid (\d+)\)", seen, 60))
        view = read_until(lines, r"web view  (http://127\.0\.0\.1:\d+/)", seen, 120)
        [token] = re.findall(r"web view  \S+ \(token (\S+): the page asks for it\)", "".join(seen))
        assert any("ok   nothing lost" in line for line in seen), "".join(seen)
        assert any(re.search(r"metrics   http://127\.0\.0\.1:\d+/metrics", s) for s in seen)

        status, page = fetch(view)  # the page loads without the token, its data does not
        assert status == 200 and 'data-page="overview"' in page
        assert fetch(view + "ui/api/overview")[0] == 401
        status, body = fetch(view + "ui/api/overview", token)
        names = {q["row"]["name"] for q in json.loads(body)["queues"]}
        assert {"demo.jobs", "demo.sessions"} <= names
        assert len(json.loads(body)["workers"]) == 2

        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0, "".join(seen)
        assert not pid_alive(redis_pid), "the demo left its redis-server behind"
    finally:
        stop(process)
