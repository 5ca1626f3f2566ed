"""Every file in examples/ runs against the test Redis, exits 0 and shows its point."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support import ROOT
from tests.support.cli import cli_env

EXAMPLES = ROOT / "examples"

EXPECTED = {
    "producer_worker.py": [r"enqueued 20 e-mails", r"sent 20 e-mails", r"queue: 0 tasks left"],
    "cancel_by_payload.py": [
        r"cancelled the queued report-2025: 1 copy removed",
        r"running https://example.com/: its handler got CancelledError",
        r"running report-2024: its handler saw current_process\(\).cancelled and returned",
        r"report-2025 never ran: True; nothing queued or running: True",
    ],
    "persistent_tasks.py": [
        r"SIGKILLed worker pid (\d+), which served feed-0",
        r"s later its peers serve them",
        r"cancelled 4 feeds by payload",
    ],
    "async_worker.py": [r"fetched 40 pages in [\d.]+ s \(8 s one at a time\)"],
    "jobs_results.py": [
        r"submitted thumb-cat; again with its id: duplicate=True",
        r"result: cat-small\.jpg \(attempt 1\)",
        r"flaky result: flaky-small\.jpg \(attempt 2\)",
        r"poster\.psd failed: Fail: photoshop files are not supported",
        r"its record: state=failed attempts=1",
        r"unique: the second submit found True",
        r"'finished': 3, 'failed': 1",
    ],
    "delayed_jobs.py": [
        r"delayed: 3",
        r"cancelled the spam before it was due: True",
        r"sent: stand up",
        r"sent: drink water",
        r"each started within \d+ ms of its due time",
        r"'finished': 2, 'failed': 0, 'cancelled': 1",
    ],
    "schedules.py": [
        r"nightly next runs at \d+ \(Redis time, 03:00 in Berlin\)",
        r"3 workers, [5-7] heartbeats, none twice: True",
        r"gaps between fire times: \[500\] ms",
        r"schedules: \['heartbeat', 'nightly'\]",
        r"unscheduled: True",
    ],
    "flows.py": [
        r"chain: stored HTTPS://EXAMPLE\.COM",
        r"fan-in: q3: 10 parts, total 385",
        r"on_child_failure=ignore: flow finished: ignore: 2 parts, total 340",
        r"on_child_failure=fail: flow failed: ChildFailed: child part/\S+\.1 failed: Fail: unlucky",
    ],
    "metrics_prometheus.py": [
        r'worker endpoint: worqr_tasks_finished_total\{queue="thumbnails"\} 50\.0',
        r'exporter endpoint: worqr_queue_events_total\{event="finished",queue="thumbnails"\} 50',
        # CI installs prometheus; elsewhere the example says it is missing.
        r"prometheus: (sum\(worqr_tasks_finished_total\{.*\}\) = 50|not installed)",
    ],
}


def test_every_example_is_tested() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


MARKS = {
    # Starts a real Prometheus when one is installed (CI installs it).
    "metrics_prometheus.py": [pytest.mark.slow, pytest.mark.prometheus],
    "persistent_tasks.py": [pytest.mark.slow],
    "schedules.py": [pytest.mark.slow],
}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=MARKS.get(name, [])) for name in sorted(EXPECTED)]
)
def test_example_runs(name: str, redis_url: str, prefix: str) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--url", redis_url, "--prefix", prefix],
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for pattern in EXPECTED[name]:
        assert re.search(pattern, result.stdout), (pattern, result.stdout)
    assert "Traceback" not in result.stderr
    if name == "persistent_tasks.py":  # the feeds moved off the killed worker, and only off it
        before, _, after = result.stdout.partition("SIGKILLed")
        victim = re.search(r"worker pid (\d+)", after)
        assert victim is not None and victim.group(1) in before
        assert victim.group(1) not in after.splitlines()[1]
