"""`worqr submit` end to end: the job it creates (read back with the client),
its options, and `--wait` against a real `worqr worker` (fixture ``job_mesh``)."""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime

import pytest
import redis

import worqr
from tests.support.cli import assert_one_line_error, run_cli, run_cli_bytes, start_cli
from tests.support.processes import stop
from tests.support.waiting import wait_until
from worqr._cli.job_parser import epoch_time
from worqr._keys import MeshKeys
from worqr.embedded import free_port

from .conftest import JobMesh


def submit(url: str, prefix: str, *args: str, input: bytes | None = None) -> str:
    """Run `worqr submit ARGS...` and return the id it printed."""
    result = run_cli("submit", *args, "--url", url, "--prefix", prefix, input=input)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    [id] = result.stdout.splitlines()
    return id


def record(
    redis_client: redis.Redis,
    prefix: str,
    queue: str,
    id: str,
    missing: dict[str, object] | None = None,
) -> dict[str, object]:
    """The job's stored record (the options the scripts keep); ``missing`` if
    there is none yet (else that fails)."""
    raw = redis_client.hget(MeshKeys(prefix).queue(queue).jobs, id)
    if raw is None and missing is not None:
        return missing
    assert raw is not None
    loaded: dict[str, object] = json.loads(raw)
    return loaded


def test_submit_prints_the_id_of_a_new_job(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    id = submit(redis_url, prefix, "emails", "hello")
    job = wq.get_job("emails", id)
    assert job is not None
    assert (job.state, job.payload, job.attempts) == ("queued", "hello", 0)
    assert "emails" in wq.get_queues()


def test_a_live_id_is_a_duplicate(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    assert submit(redis_url, prefix, "q", "first", "--id", "order-7") == "order-7"
    again = run_cli(
        "submit", "q", "second", "--id", "order-7", "--url", redis_url, "--prefix", prefix
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == "order-7\n"  # stdout stays just the id, for scripts
    assert again.stderr == (
        "worqr submit: order-7 is a duplicate: a live job already has this id; "
        "nothing was created\n"
    )
    assert wq.count_jobs("q")["queued"] == 1
    assert wq.get_job("q", "order-7").payload == "first"  # type: ignore[union-attr]


def test_a_dedup_key_answers_with_its_job(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    options = ["--dedup", "doc-7", "--dedup-mode", "debounce", "--delay", "60"]
    first = submit(redis_url, prefix, "q", "v1", *options)
    again = run_cli("submit", "q", "v2", *options, "--url", redis_url, "--prefix", prefix)
    assert again.returncode == 0, again.stderr
    assert again.stdout == f"{first}\n"
    assert again.stderr == (
        f"worqr submit: {first} is the job of dedup key 'doc-7'; no job was created\n"
    )
    assert wq.get_job("q", first).payload == "v2"  # type: ignore[union-attr]  # debounced
    throttled = submit(redis_url, prefix, "q", "t", "--dedup", "d", "--dedup-ttl", "60")
    assert wq.submit("q", "t2", dedup=worqr.Dedup("d", ttl=60)).id == throttled


def test_stdin_is_one_job_byte_for_byte(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    binary = bytes(range(256)) * 3 + b"\r\n\n"
    id = submit(redis_url, prefix, "files", input=binary)
    assert wq.get_job("files", id).payload == binary  # type: ignore[union-attr]
    text = "two\nlines, é\n"
    id = submit(redis_url, prefix, "files", input=text.encode())
    assert wq.get_job("files", id).payload == text  # type: ignore[union-attr]
    assert wq.count_jobs("files")["queued"] == 2


def test_an_argument_that_is_not_utf8_is_kept_as_bytes(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    id = submit(redis_url, prefix, "files", os.fsdecode(b"caf\xe9"))
    assert wq.get_job("files", id).payload == b"caf\xe9"  # type: ignore[union-attr]


def test_delay_and_at_set_the_due_time(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    delayed = wq.get_job("later", submit(redis_url, prefix, "later", "a", "--delay", "30"))
    assert delayed is not None and delayed.state == "delayed" and delayed.due is not None
    assert delayed.due - delayed.created == pytest.approx(30, abs=0.002)
    epoch = wq.get_job("later", submit(redis_url, prefix, "later", "b", "--at", "1900000000.25"))
    assert epoch is not None and epoch.state == "delayed" and epoch.due == 1900000000.25
    iso = wq.get_job(
        "later", submit(redis_url, prefix, "later", "c", "--at", "2030-01-01T02:00+02:00")
    )
    assert iso is not None and iso.due == datetime(2030, 1, 1, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    "value",
    [
        "1893456000",
        "1893456000.0",
        "2030-01-01T00:00:00Z",
        "2030-01-01T02:00:00+02:00",
        "2029-12-31T19:00-05:00",
        "2030-01-01 00:00:00.000+00:00",
    ],
)
def test_at_reads_epoch_seconds_and_iso_8601(value: str) -> None:
    assert epoch_time(value) == datetime(2030, 1, 1, tzinfo=UTC).timestamp()


def test_priority_orders_the_queue(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    plain = submit(redis_url, prefix, "q", "plain")
    urgent = submit(redis_url, prefix, "q", "urgent", "--priority", "5")
    low = submit(redis_url, prefix, "q", "low", "--priority", "-5")
    jobs, _ = wq.get_jobs("q", "queued")
    assert [job.id for job in jobs] == [urgent, plain, low]  # higher runs first


def test_unique_retries_and_timeout_are_stored(
    redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    unique = submit(redis_url, prefix, "q", "sync-7", "--unique")
    again = run_cli("submit", "q", "sync-7", "--unique", "--url", redis_url, "--prefix", prefix)
    assert again.stdout == f"{unique}\n"
    assert "a live job already has this payload; nothing was created" in again.stderr
    options = submit(redis_url, prefix, "q", "opts", "--retries", "2", "--timeout", "1.5")
    stored = record(redis_client, prefix, "q", options)
    assert (stored["R"], stored["T"]) == (2, 1500)
    assert "R" not in record(redis_client, prefix, "q", unique)  # the handler's default applies


def test_wait_prints_a_str_result(job_mesh: JobMesh) -> None:
    result = job_mesh.run("submit", "work", "text:héllo wörld", "--wait")
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == ("héllo wörld\n", "")
    nothing = job_mesh.run("submit", "work", "none", "--wait", "--wait-timeout", "30")
    assert (nothing.returncode, nothing.stdout, nothing.stderr) == (0, "", "")


def test_wait_writes_a_bytes_result_exactly(job_mesh: JobMesh) -> None:
    payload = bytes(range(256)) + b"\n\x00end"
    result = run_cli_bytes(
        "submit", "raw", "--wait", "--url", job_mesh.url, "--prefix", job_mesh.prefix, input=payload
    )
    assert result.returncode == 0, result.stderr
    assert (result.stdout, result.stderr) == (payload, b"")


def test_wait_exits_4_when_the_job_fails(job_mesh: JobMesh) -> None:
    id = job_mesh.new_id()
    result = job_mesh.run("submit", "work", "fail:disk full", "--id", id, "--wait")
    assert_one_line_error(result, 4, f"job {id!r} on queue 'work' failed: ValueError: disk full")
    assert result.stdout == ""


def test_retries_and_timeout_change_what_the_worker_does(job_mesh: JobMesh) -> None:
    id = job_mesh.new_id()
    result = job_mesh.run("submit", "work", "fail:again", "--id", id, "--retries", "2", "--wait")
    assert_one_line_error(result, 4, "ValueError: again")
    job = job_mesh.client.get_job("work", id)
    assert job is not None and (job.state, job.attempts) == ("failed", 3)  # the handler: 0

    id = job_mesh.new_id()
    result = job_mesh.run("submit", "work", "sleep:60", "--id", id, "--timeout", "0.2", "--wait")
    assert_one_line_error(result, 4, f"job {id!r}", "TimeoutError: ran past 0.2 s")


def test_wait_exits_4_when_the_job_is_cancelled(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    process = start_cli(
        "submit", "q", "x", "--id", "c-1", "--wait", "--url", redis_url, "--prefix", prefix
    )
    try:
        # Cancelled while the command waits (or before: its first read sees it).
        wait_until(lambda: wq.get_job("q", "c-1") is not None, timeout=20)
        assert wq.cancel_job("q", "c-1")
        stdout, stderr = process.communicate(timeout=20)
    finally:
        stop(process)
    assert process.returncode == 4, stderr
    assert stdout == b""
    assert stderr.decode().splitlines() == [
        "worqr submit: error: job 'c-1' on queue 'q' was cancelled"
    ]


def test_a_wait_that_times_out_names_the_job_and_its_state(
    redis_url: str, prefix: str, wq: worqr.Worqr
) -> None:
    result = run_cli(
        "submit",
        "q",
        "x",
        "--id",
        "w-1",
        "--wait",
        "--wait-timeout",
        "0.3",
        "--url",
        redis_url,
        "--prefix",
        prefix,
    )
    assert_one_line_error(
        result, 1, "job 'w-1' on queue 'q' is still queued after 0.3 s", "worqr job q w-1"
    )
    assert result.stdout == ""
    assert wq.get_job("q", "w-1").state == "queued"  # type: ignore[union-attr]  # still there


def test_ctrl_c_during_a_wait_names_the_job_it_leaves(
    redis_url: str, prefix: str, wq: worqr.Worqr, redis_client: redis.Redis
) -> None:
    process = start_cli(
        "submit", "q", "x", "--id", "i-1", "--wait", "--url", redis_url, "--prefix", prefix
    )
    try:
        # Interrupt the wait itself: the waiter has marked the job's record.
        wait_until(lambda: "w" in record(redis_client, prefix, "q", "i-1", missing={}), timeout=20)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=20)
    finally:
        stop(process)
    assert process.returncode == 130, stderr
    assert stdout == b""
    assert stderr.decode().splitlines() == [
        "worqr submit: error: interrupted; job 'i-1' on queue 'q' stays submitted: "
        "see `worqr job q i-1`"
    ]
    assert wq.get_job("q", "i-1").state == "queued"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        (["x", "--wait-timeout", "1"], "--wait-timeout needs --wait"),
        (["--wait-timeout", "1"], "--wait-timeout needs --wait"),  # stdin is not read
        (["x", "--delay", "1", "--at", "5"], "argument --at: not allowed with argument --delay"),
        (["x", "--delay", "-1"], "argument --delay: must be a number >= 0"),
        (["x", "--delay", "soon"], "argument --delay: not a number: 'soon'"),
        (["x", "--at", "2030-01-01T09:00:00"], "has no time zone"),
        (["x", "--at", "tomorrow"], "not epoch seconds or an ISO 8601 time: 'tomorrow'"),
        (["x", "--at", "nan"], "must be epoch seconds >= 0"),
        (["x", "--at", "-5"], "must be epoch seconds >= 0"),
        (["x", "--priority", "1.5"], "argument --priority: not an integer"),
        (["x", "--priority", "2000000"], "must be between -1,000,000 and 1,000,000"),
        (["x", "--retries", "-1"], "argument --retries: must be an integer >= 0"),
        (["x", "--retries", "many"], "argument --retries: not an integer"),
        (["x", "--timeout", "0"], "argument --timeout: must be a positive number"),
        (["x", "--wait", "--wait-timeout", "-1"], "argument --wait-timeout: must be a positive"),
        (["x", "--id", ""], "job id must be 1 to 256 characters"),
        (["x", "--id", "a\tb"], "contains a control character"),
        (["x", "--id", "i" * 257], "job id must be 1 to 256 characters"),
        (["x", "--dedup", ""], "dedup key must be 1 to 256 characters"),
        (["x", "--dedup", "k"], "dedup mode 'throttle' needs a --dedup-ttl"),
        (["x", "--dedup-ttl", "5"], "--dedup-ttl and --dedup-mode need --dedup KEY"),
        (["x", "--dedup", "k", "--dedup-ttl", "0"], "argument --dedup-ttl: must be a positive"),
        (["x", "--dedup", "k", "--dedup-mode", "latest"], "argument --dedup-mode: invalid choice"),
        (["x", "--dedup", "k", "--dedup-mode", "debounce", "--dedup-ttl", "5"], "takes no ttl"),
        (["x", "--dedup", "k", "--dedup-ttl", "5", "--unique"], "give dedup or unique=True"),
        (["x", "--dedup", "k", "--dedup-ttl", "5", "--id", "a"], "dedup takes no id"),
    ],
)
def test_usage_errors_write_nothing(
    options: list[str], fragment: str, redis_url: str, prefix: str, redis_client: redis.Redis
) -> None:
    result = run_cli("submit", "q", *options, "--url", redis_url, "--prefix", prefix, input=b"in")
    assert_one_line_error(result, 2, "worqr submit: error:", fragment)
    assert result.stdout == ""
    assert list(redis_client.scan_iter(match=f"*{prefix}*")) == []


def test_a_bad_queue_name_is_a_usage_error() -> None:
    assert_one_line_error(run_cli("submit", "a{b", "x"), 2, "queue name 'a{b' contains '{'")


def test_a_task_queue_refuses_jobs(redis_url: str, prefix: str, wq: worqr.Worqr) -> None:
    wq.enqueue("tasks", "a")
    result = run_cli("submit", "tasks", "x", "--url", redis_url, "--prefix", prefix)
    assert_one_line_error(result, 1, "worqr submit: error: queue 'tasks': this queue holds tasks")
    assert wq.count_tasks("tasks") == 1


@pytest.mark.parametrize("command", [["submit", "q", "x"], ["job", "q", "id"], ["jobs", "q"]])
def test_unreachable_redis_is_one_line(command: list[str]) -> None:
    dead_url = f"redis://127.0.0.1:{free_port()}/0"
    result = run_cli(*command, "--url", dead_url, "--retry-deadline", "0.2")
    assert_one_line_error(result, 1, f"worqr {command[0]}: error:", "Connection refused")
