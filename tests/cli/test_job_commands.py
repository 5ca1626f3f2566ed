"""`worqr job` and `worqr jobs`, and what `failed`, `cancel`, `status` and `top`
do on a job queue. Jobs are put in each state by a client acting as the worker
(its job plans, as the worker runtime calls them), so counts are exact."""

from __future__ import annotations

import base64
import dataclasses
import json
import re

import pytest

import worqr
from tests.support.cli import assert_one_line_error, cli_env, run_cli
from tests.support.waiting import wait_until
from worqr._jobs import STATES, JobProcess

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


class Cli:
    def __init__(self, url: str, prefix: str) -> None:
        self.url, self.prefix = url, prefix

    def __call__(self, *args: str) -> tuple[int, str, str]:
        result = run_cli(*args, "--url", self.url, "--prefix", self.prefix)
        return result.returncode, result.stdout, result.stderr

    def ok(self, *args: str) -> str:
        code, out, err = self(*args)
        assert code == 0, err
        return out


@pytest.fixture
def cli(redis_url: str, prefix: str) -> Cli:
    return Cli(redis_url, prefix)


def take(worker: worqr.Worqr, queue: str, count: int = 1) -> list[JobProcess]:
    worker.internals.mark_job_queue(queue)
    _, taken, _ = worker.internals.take_jobs(queue, [], count)
    assert len(taken) == count
    return taken


def finish(worker: worqr.Worqr, process: JobProcess, result: str | bytes) -> None:
    kind, data = ("b", result) if isinstance(result, bytes) else ("s", result.encode())
    [done], _, _ = worker.internals.take_jobs(process.queue, [(process, kind, data)], 0)
    assert done


def fail(worker: worqr.Worqr, process: JobProcess, error: str, *, retry: bool = False) -> None:
    mode, retries, delay = ("error", 5, 60.0) if retry else ("fail", 0, 0.0)
    done, _ = worker.internals.fail_job(
        process, mode=mode, delay=delay, retries=retries, error=error
    )
    assert done


def every_state(wq: worqr.Worqr, worker: worqr.Worqr, queue: str) -> dict[str, list[str]]:
    """Jobs of ``queue`` in every state: 2 delayed, 3 queued, and one of each other."""
    ids: dict[str, list[str]] = {}
    for name in ("active", "retrying", "finished", "failed", "cancelled"):
        ids[name] = [wq.submit(queue, name, id=f"{name}-1").id]
    processes = {p.job_id: p for p in take(worker, queue, 4)}
    fail(worker, processes["retrying-1"], "OSError: flaky", retry=True)
    finish(worker, processes["finished-1"], "ok")
    fail(worker, processes["failed-1"], "ValueError: " + "bad input " * 20)
    assert wq.cancel_job(queue, "cancelled-1")
    ids["delayed"] = [
        wq.submit(queue, f"d{i}", id=f"delayed-{i}", delay=600 + i).id for i in (1, 2)
    ]
    ids["queued"] = [wq.submit(queue, f"q{i}", id=f"queued-{i}").id for i in (1, 2, 3)]
    assert wq.count_jobs(queue) == {
        "delayed": 2,
        "queued": 3,
        "active": 1,
        "retrying": 1,
        "finished": 1,
        "failed": 1,
        "cancelled": 1,
    }
    return ids


# -- worqr job ---------------------------------------------------------------------------


def test_job_shows_the_record(cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    wq.submit("thumbs", "cat.png", id="t-1")
    [process] = take(worker, "thumbs")
    assert worker.internals.report_progress(process, b"resizing")
    finish(worker, process, "cat-small.png")
    fields = dict(line.split(None, 1) for line in cli.ok("job", "thumbs", "t-1").splitlines())
    assert list(fields) == [
        "id",
        "queue",
        "state",
        "attempts",
        "created",
        "started",
        "ended",
        "due",
        "error",
        "progress",
        "payload",
        "result",
    ]
    assert (fields["id"], fields["queue"], fields["state"], fields["attempts"]) == (
        "t-1",
        "thumbs",
        "finished",
        "1",
    )
    for name in ("created", "started", "ended"):
        assert ISO.match(fields[name]), fields[name]
    assert (fields["due"], fields["error"]) == ("-", "-")
    assert (fields["progress"], fields["payload"], fields["result"]) == (
        "resizing",
        "cat.png",
        "cat-small.png",
    )


def test_job_previews_values_on_one_bounded_line(cli: Cli, wq: worqr.Worqr) -> None:
    wq.submit("q", b"\x00\xffbin", id="binary")
    wq.submit("q", "two\nlines", id="lines")
    wq.submit("q", "é" * 100_000, id="huge", delay=60)

    def fields(id: str) -> dict[str, str]:
        return dict(line.split(None, 1) for line in cli.ok("job", "q", id).splitlines())

    assert fields("binary")["payload"] == "b'\\x00\\xffbin'"
    assert fields("lines")["payload"] == "'two\\nlines'"
    huge = fields("huge")
    assert huge["payload"] == "é" * 200 + "... (200,000 bytes)"
    assert huge["state"] == "delayed" and ISO.match(huge["due"])


def test_job_json_has_every_field_with_bytes_as_base64(
    cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    payload, result = bytes(range(256)), b"\xff\x00result"
    wq.submit("q", payload, id="b-1")
    [process] = take(worker, "q")
    finish(worker, process, result)
    document = json.loads(cli.ok("job", "q", "b-1", "--json"))
    job = wq.get_job("q", "b-1")
    assert job is not None
    expected = {
        field.name: getattr(job, field.name)
        for field in dataclasses.fields(job)
        if field.name not in ("payload", "result")
    }
    assert base64.b64decode(document.pop("payload_b64")) == payload
    assert base64.b64decode(document.pop("result_b64")) == result
    assert document == expected  # progress None: "progress": null

    wq.submit("q", "text", id="s-1")
    document = json.loads(cli.ok("job", "q", "s-1", "--json"))
    assert (document["payload"], document["result"], document["state"]) == ("text", None, "queued")


def test_an_unknown_job_exits_1(cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    code, out, err = cli("job", "q", "nope")
    assert (code, out) == (1, "")
    assert err == "worqr job: error: no job 'nope' on queue 'q' (or it was purged)\n"
    code, _, err = cli("job", "q", "nope", "--cancel")
    assert (code, err) == (1, "worqr job: error: no job 'nope' on queue 'q' (or it was purged)\n")
    wq.enqueue("tasks", "a")
    code, _, err = cli("job", "tasks", "nope")
    assert (code, err) == (
        1,
        "worqr job: error: queue 'tasks' holds tasks (it is a task queue), not jobs\n",
    )
    process = worker.dequeue("tasks")  # an emptied task queue: no such job, as it says
    assert process is not None and worker.finish_process(process)
    code, _, err = cli("job", "tasks", "nope")
    assert (code, err) == (
        1,
        "worqr job: error: no job 'nope' on queue 'tasks' (it is a task queue)\n",
    )


def test_job_cancel(cli: Cli, wq: worqr.Worqr) -> None:
    wq.submit("q", "x", id="c-1")
    said = cli.ok("job", "q", "c-1", "--cancel")
    assert said == "cancelled job 'c-1' on queue 'q' (it was queued)\n"
    assert wq.get_job("q", "c-1").state == "cancelled"  # type: ignore[union-attr]
    code, out, err = cli("job", "q", "c-1", "--cancel")
    assert (code, out) == (1, "")
    assert err == (
        "worqr job: error: job 'c-1' on queue 'q' is already cancelled: nothing to cancel\n"
    )
    wq.submit("q", "y", id="c-2")
    document = json.loads(cli.ok("job", "q", "c-2", "--cancel", "--json"))
    assert (document["id"], document["state"]) == ("c-2", "cancelled")


def test_job_retry(cli: Cli, wq: worqr.Worqr) -> None:
    wq.submit("q", "x", id="r-1")
    assert wq.cancel_job("q", "r-1")
    said = cli.ok("job", "q", "r-1", "--retry")
    assert said == "retried job 'r-1' on queue 'q': queued again (it was cancelled)\n"
    assert wq.get_job("q", "r-1").state == "queued"  # type: ignore[union-attr]
    code, _, err = cli("job", "q", "r-1", "--retry")
    assert code == 1
    assert err == (
        "worqr job: error: job 'r-1' on queue 'q' is queued, not failed or cancelled: "
        "nothing to retry\n"
    )


def test_retry_refused_while_another_job_holds_the_unique_payload(
    cli: Cli, wq: worqr.Worqr
) -> None:
    wq.submit("q", "sync", id="u-1", unique=True)
    assert wq.cancel_job("q", "u-1")
    wq.submit("q", "sync", id="u-2", unique=True)
    code, _, err = cli("job", "q", "u-1", "--retry")
    assert code == 1
    assert err == (
        "worqr job: error: job 'u-1' on queue 'q' was not retried: another live job holds "
        "its unique payload\n"
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["job", "q", "x", "--cancel", "--retry"], "argument --retry: not allowed with"),
        (["job", "q", "a\nb"], "argument ID: job id 'a\\nb' contains a control character"),
        (["job", "q"], "the following arguments are required: ID"),
        (["jobs", "q", "--state", "done"], "unknown state 'done': one of delayed, queued, active"),
        (["jobs", "q", "--limit", "0"], "argument --limit: must be at least 1"),
    ],
)
def test_usage_errors(args: list[str], fragment: str) -> None:
    assert_one_line_error(run_cli(*args), 2, fragment)


# -- worqr jobs --------------------------------------------------------------------------


def test_jobs_shows_counts_and_jobs_in_lifecycle_order(
    cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    every_state(wq, worker, "q")
    lines = cli.ok("jobs", "q").splitlines()
    assert lines[0] == (
        "queue 'q': 2 delayed, 3 queued, 1 active, 1 retrying, 1 finished, 1 failed, 1 cancelled"
    )
    assert lines[1].split() == ["ID", "STATE", "ATTEMPTS", "WHEN", "ERROR"]
    rows = [line.split() for line in lines[2:]]
    assert [row[:3] for row in rows] == [
        ["delayed-1", "delayed", "0"],
        ["delayed-2", "delayed", "0"],
        ["queued-1", "queued", "0"],
        ["queued-2", "queued", "0"],
        ["queued-3", "queued", "0"],
        ["active-1", "active", "1"],
        ["retrying-1", "retrying", "1"],
        ["finished-1", "finished", "1"],
        ["failed-1", "failed", "1"],
        ["cancelled-1", "cancelled", "0"],
    ]
    whens = {row[0]: row[3] for row in rows}
    assert (whens["delayed-1"], whens["queued-1"], whens["active-1"]) == (
        "due",
        "created",
        "started",
    )
    assert (whens["retrying-1"], whens["failed-1"]) == ("due", "ended")
    assert all(ISO.match(row[4]) for row in rows)
    assert rows[6][5:] == ["OSError:", "flaky"]
    error = ("ValueError: " + "bad input " * 20)[:57] + "..."  # a summary: 60 characters
    assert lines[2 + 8].endswith(f"  {error}")

    limited = cli.ok("jobs", "q", "--limit", "2").splitlines()
    assert [line.split()[0] for line in limited[2:9]] == [
        "delayed-1",
        "delayed-2",
        "queued-1",
        "queued-2",
        "active-1",
        "retrying-1",
        "finished-1",
    ]
    assert limited[-1] == "(showing 2 of 3 queued: worqr jobs q --state queued --limit N for more)"


def test_jobs_json(cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    ids = every_state(wq, worker, "q")
    document = json.loads(cli.ok("jobs", "q", "--json"))
    assert document["queue"] == "q" and document["overdue"] == 0
    assert document["counts"] == wq.count_jobs("q")
    assert [job["id"] for job in document["jobs"]] == [id for state in STATES for id in ids[state]]
    failed = next(job for job in document["jobs"] if job["state"] == "failed")
    assert failed["error"].startswith("ValueError: bad input") and failed["attempts"] == 1
    assert "payload" not in failed and "result" not in failed  # `worqr job --json` has them

    only = json.loads(cli.ok("jobs", "q", "--state", "retrying", "--json"))
    assert only["counts"] == {"retrying": 1}
    assert [job["id"] for job in only["jobs"]] == ["retrying-1"]
    assert only["jobs"][0]["due"] > only["jobs"][0]["created"]


@pytest.mark.slow
def test_jobs_of_one_state_page_through_cursors(cli: Cli, wq: worqr.Worqr) -> None:
    # More than one page of get_jobs (1,000), across priorities: run order throughout.
    urgent = [ref.id for ref in wq.submit_many("q", ["u"] * 5, priority=3)]
    plain = [ref.id for ref in wq.submit_many("q", [f"p{i}" for i in range(1100)])]
    low = [ref.id for ref in wq.submit_many("q", ["l"] * 5, priority=-1)]
    everything = urgent + plain + low
    listed = json.loads(cli.ok("jobs", "q", "--state", "queued", "--limit", "5000", "--json"))
    assert [job["id"] for job in listed["jobs"]] == everything
    text = cli.ok("jobs", "q", "--state", "queued", "--limit", "1003").splitlines()
    assert text[0] == "queue 'q': 1110 queued"
    assert [line.split()[0] for line in text[2:-1]] == everything[:1003]
    assert (
        text[-1] == "(showing 1003 of 1110 queued: worqr jobs q --state queued --limit N for more)"
    )


def test_jobs_of_an_empty_or_task_queue(cli: Cli, wq: worqr.Worqr) -> None:
    assert cli.ok("jobs", "nothing-yet") == (
        "queue 'nothing-yet': 0 delayed, 0 queued, 0 active, 0 retrying, 0 finished, "
        "0 failed, 0 cancelled\n"
    )
    assert cli.ok("jobs", "nothing-yet", "--state", "failed") == "queue 'nothing-yet': 0 failed\n"
    wq.enqueue("tasks", "a")
    code, _, err = cli("jobs", "tasks")
    assert (code, err) == (
        1,
        "worqr jobs: error: queue 'tasks' is a task queue: it holds no jobs (see worqr status)\n",
    )


# -- failed, cancel, status and top on job queues ------------------------------------------


def test_failed_lists_requeues_and_purges_failed_jobs(
    cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr
) -> None:
    for name in ("first", "second"):
        wq.submit("q", name, id=name)
        [process] = take(worker, "q")
        fail(worker, process, f"ValueError: {name} broke")
    wq.submit("q", "fine", id="fine")
    lines = cli.ok("failed", "q").splitlines()
    assert [line.split(None, 2) for line in lines] == [
        ["ID", "ATTEMPTS", "ERROR"],
        ["first", "1", "ValueError: first broke"],
        ["second", "1", "ValueError: second broke"],
    ]
    assert cli.ok("failed", "q", "--requeue") == "requeued 2 failed jobs on 'q'\n"
    counts = wq.count_jobs("q")
    assert (counts["queued"], counts["failed"]) == (3, 0)
    assert wq.get_job("q", "first").attempts == 1  # type: ignore[union-attr]  # a new life


def test_failed_purges_failed_jobs(cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    for name in ("a", "b", "c"):
        wq.submit("q", name, id=name)
    wq.submit("q", "fine", id="fine")
    for process in take(worker, "q", 3):
        fail(worker, process, "E: broke")
    assert cli.ok("failed", "q", "--purge") == "purged 3 failed jobs on 'q'\n"
    assert wq.get_job("q", "a") is None and wq.count_jobs("q")["failed"] == 0
    assert wq.get_job("q", "fine").state == "queued"  # type: ignore[union-attr]
    assert cli.ok("failed", "q") == ""


def test_cancel_by_payload_on_a_job_queue(cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    wq.submit("q", "x", id="x-1")
    wq.submit("q", "y", id="y-1")
    take(worker, "q", 2)  # both active
    wq.submit("q", "x", id="x-2")
    wq.submit("q", "x", id="x-3", delay=60)
    assert cli.ok("cancel", "q", "x") == "cancelled 3 jobs on 'q'\n"
    states = {id: wq.get_job("q", id).state for id in ("x-1", "x-2", "x-3", "y-1")}  # type: ignore[union-attr]
    assert states == {"x-1": "cancelled", "x-2": "cancelled", "x-3": "cancelled", "y-1": "active"}
    assert cli.ok("cancel", "q", "x") == "cancelled 0 jobs on 'q'\n"


def overdue(wq: worqr.Worqr, queue: str) -> None:
    """A delayed job whose time has come, that no member has promoted yet."""
    ref = wq.submit(queue, "late", delay=0.05)
    due = wq.get_job(queue, ref.id).due  # type: ignore[union-attr]
    wait_until(lambda: wq.server_time() > due + 0.01, message="the job to be due")


def test_status_shows_job_counts(cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    wq.enqueue_many("tasks", ["a", "b"])
    every_state(wq, worker, "jobs")
    overdue(wq, "jobs")
    status = json.loads(cli.ok("status", "--json"))
    queues = {queue["name"]: queue for queue in status["queues"]}
    assert queues["tasks"]["kind"] == "tasks" and queues["tasks"]["jobs"] is None
    assert queues["tasks"]["queued"] == 2
    jobs = queues["jobs"]
    assert jobs["kind"] == "jobs"
    assert jobs["jobs"] == {
        "delayed": 3,
        "queued": 3,
        "active": 1,
        "retrying": 1,
        "finished": 1,
        "failed": 1,
        "cancelled": 1,
        "overdue": 1,
    }
    assert (jobs["queued"], jobs["in_process"], jobs["failed"]) == (3, 1, 1)
    assert jobs["stats"]["submitted"] == 11

    lines = cli.ok("status").splitlines()
    assert lines[2].split() == ["QUEUE", "QUEUED", "IN", "PROCESS", "FAILED"]
    assert lines[3].split() == ["tasks", "2", "0", "0"]
    assert lines[5].split() == [
        "JOB",
        "QUEUE",
        "QUEUED",
        "DELAYED",
        "ACTIVE",
        "RETRYING",
        "OVERDUE",
        "FINISHED",
        "FAILED",
    ]
    assert lines[6].split() == ["jobs", "3", "3", "1", "1", "1", "1", "1"]
    first = cli.ok("jobs", "jobs").splitlines()[0]
    assert first.endswith(" 1 cancelled (1 overdue: due, not yet promoted)")


def test_top_shows_job_counts(cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    wq.enqueue("tasks", "a")
    every_state(wq, worker, "renders")
    overdue(wq, "renders")
    args = [
        "top",
        "--iterations",
        "2",
        "--interval",
        "0.05",
        "--url",
        cli.url,
        "--prefix",
        cli.prefix,
    ]
    result = run_cli(*args, env=cli_env(COLUMNS="120"))  # as wide as a usual terminal
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "job queues" in out and "overdue" in out and "submitted/s" in out
    row = [line for line in out.splitlines() if line.startswith("│ renders ")][-1]
    assert re.findall(r"\d+", row)[:7] == ["3", "3", "1", "1", "1", "1", "1"]
    assert "tasks" in out  # the task queue keeps its own table


# -- worqr jobs --cancel/--retry/--promote/--purge, worqr delete --if-idle ----------------


def test_jobs_bulk_actions_print_how_many(cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    every_state(wq, worker, "q")
    assert cli.ok("jobs", "q", "--promote", "--limit", "1") == "promoted 1 job on 'q'\n"
    assert wq.count_jobs("q")["delayed"] == 1
    assert cli.ok("jobs", "q", "--cancel", "--state", "queued") == "cancelled 4 jobs on 'q'\n"
    assert cli.ok("jobs", "q", "--retry", "--state", "failed") == "retried 1 job on 'q'\n"
    assert cli.ok("jobs", "q", "--cancel") == "cancelled 4 jobs on 'q'\n"  # the live rest
    assert wq.count_jobs("q") == {**dict.fromkeys(STATES, 0), "finished": 1, "cancelled": 9}
    said = cli.ok("jobs", "q", "--purge", "--state", "cancelled", "--older-than", "3600")
    assert said == "purged 0 jobs on 'q'\n"
    said = cli.ok("jobs", "q", "--purge", "--state", "cancelled", "--json")
    assert json.loads(said) == {"queue": "q", "purged": 9}
    assert wq.count_jobs("q") == {**dict.fromkeys(STATES, 0), "finished": 1}


def test_delete_if_idle(cli: Cli, wq: worqr.Worqr, worker: worqr.Worqr) -> None:
    wq.submit("q", "x")
    [process] = take(worker, "q")
    code, out, err = cli("delete", "q", "--if-idle")
    assert (code, out) == (1, "")
    assert err == "worqr delete: error: queue 'q' has jobs in process: nothing was deleted\n"
    assert wq.count_jobs("q")["active"] == 1
    finish(worker, process, "ok")
    assert cli.ok("delete", "q", "--if-idle") == "deleted queue 'q'\n"
    assert wq.get_queues() == []


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--cancel", "--retry"], "argument --retry: not allowed with argument --cancel"),
        (["--older-than", "5"], "--older-than needs --purge"),
        (["--purge"], "--purge needs --state finished, failed or cancelled"),
        (["--purge", "--state", "queued"], "--purge takes --state finished or failed or can"),
        (["--retry", "--state", "active"], "--retry takes --state failed or cancelled, not"),
        (["--promote", "--state", "queued"], "--promote takes --state delayed, not queued"),
        (["--cancel", "--state", "finished"], "--cancel: finished jobs are terminal already"),
        (["--cancel", "--limit", "5"], "--limit does not apply to --cancel"),
        (["--purge", "--state", "failed", "--older-than", "-1"], "argument --older-than"),
    ],
)
def test_bulk_usage_errors_change_nothing(
    cli: Cli, wq: worqr.Worqr, args: list[str], fragment: str
) -> None:
    wq.submit_many("q", ["a", "b"])
    wq.submit("q", "later", delay=600)
    assert wq.cancel_job("q", wq.submit("q", "c").id)
    before = wq.count_jobs("q")
    code, out, err = cli("jobs", "q", *args)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and fragment in err, err
    assert wq.count_jobs("q") == before


def test_jobs_lists_and_cancels_waiting_flow_parents(cli: Cli, wq: worqr.Worqr) -> None:
    """A flow parent waits for its children: `--state waiting` lists it (and the
    full listing shows it between retrying and finished) and cancels it."""
    flow = wq.submit_flow(worqr.FlowJob("q", "parent", children=[worqr.FlowJob("kids", "1")]))
    parent_id = flow.last[1]
    listed = json.loads(cli.ok("jobs", "q", "--state", "waiting", "--json"))
    assert listed["counts"] == {"waiting": 1}
    assert [(job["id"], job["state"]) for job in listed["jobs"]] == [(parent_id, "waiting")]
    assert parent_id in cli.ok("jobs", "q")
    assert cli.ok("jobs", "q", "--cancel", "--state", "waiting") == "cancelled 1 job on 'q'\n"
    assert wq.get_job("q", parent_id).state == "cancelled"  # type: ignore[union-attr]
