"""Creating jobs: ids, duplicates, unique payloads, priorities, delays, and bad
input that writes nothing."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import redis

import worqr
from worqr._core.calls import Call
from worqr._keys import MeshKeys

Make = Callable[..., worqr.Worqr]


def keys_of(raw: redis.Redis, prefix: str) -> list[bytes]:
    return sorted(raw.scan_iter(match=f"{{{prefix}*", count=1000))


def take(client: worqr.Worqr, queue: str, count: int = 10) -> list[worqr._jobs.JobProcess]:
    _, taken, _ = client.internals.take_jobs(queue, [], count)
    return taken


def test_a_job_round_trips_its_payload_and_reads_back(wq: worqr.Worqr) -> None:
    before = wq.server_time()
    ref = wq.submit("q", "hello")
    assert (ref.queue, ref.duplicate) == ("q", False) and len(ref.id) == 26
    info = wq.get_job("q", ref.id)
    assert info is not None
    assert (info.id, info.queue, info.state, info.payload) == (ref.id, "q", "queued", "hello")
    assert (info.attempts, info.result, info.error, info.progress) == (0, None, None, None)
    assert before - 0.01 <= info.created <= wq.server_time() + 0.01  # Redis's clock
    assert (info.started, info.ended, info.due) == (None, None, None)
    binary = wq.submit("q", b"\xff\x00bytes")
    assert wq.get_job("q", binary.id).payload == b"\xff\x00bytes"  # type: ignore[union-attr]
    assert wq.get_job("q", "no-such-job") is None


def test_generated_ids_sort_by_creation(wq: worqr.Worqr) -> None:
    ids = [wq.submit("q", str(i)).id for i in range(20)]
    assert ids == sorted(ids) and len(set(ids)) == 20


def test_a_live_id_is_not_created_twice_and_a_terminal_one_starts_anew(
    make: Make, wq: worqr.Worqr
) -> None:
    first = wq.submit("q", "one", id="job-1")
    again = wq.submit("q", "two", id="job-1")
    assert again == worqr.JobRef("q", "job-1", duplicate=True)
    assert wq.get_job("q", "job-1").payload == "one"  # type: ignore[union-attr]
    assert wq.count_jobs("q")["queued"] == 1
    worker = make(start=True)
    [process] = take(worker, "q")
    worker.internals.take_jobs("q", [(process, "s", b"done")], 0)
    assert wq.get_job("q", first.id).state == "finished"  # type: ignore[union-attr]
    anew = wq.submit("q", "three", id="job-1")
    assert not anew.duplicate
    info = wq.get_job("q", "job-1")
    assert info is not None and (info.state, info.payload, info.result) == ("queued", "three", None)
    assert wq.count_jobs("q") == {**dict.fromkeys(worqr._jobs.STATES, 0), "queued": 1}


def test_a_resent_submit_answers_as_the_first_call(wq: worqr.Worqr) -> None:
    """The reply of a submit was lost and the call is sent again: the same call
    (same nonce) creates nothing more and says it created the job."""
    plan = wq._core.submission.submit_many("q", ["payload"], ids=["resent"])
    request = next(plan)
    while request.script != "job_submit":  # registries first
        request = plan.send(wq._execute(request, 0))
    first = wq._execute(request, 0)
    second = wq._execute(request, 0)  # the resend
    assert [bytes(x) if isinstance(x, bytes) else x for x in first[0]] == [
        bytes(x) if isinstance(x, bytes) else x for x in second[0]
    ]
    assert int(second[0][1]) == 1  # "created", not a duplicate
    assert wq.count_jobs("q")["queued"] == 1


def submit_call(client: worqr.Worqr, payloads: list[str], **options: object) -> Call:
    """The job_submit script call a submit of ``payloads`` with ``options``
    makes (not sent)."""
    plan = client._core.submission.submit_many("q", payloads, **options)
    request = next(plan)
    while request.script != "job_submit":  # registries first
        request = plan.send(client._execute(request, 0))
    plan.close()
    return request


@pytest.mark.parametrize(
    ("jobs", "options", "resent"),
    [
        ({}, {}, True),  # kept an hour, or min_retention (10 s) under the cap: >= 10 s
        ({}, {"result_ttl": 10}, True),
        ({}, {"result_ttl": 9.9}, False),  # could be purged before resends stop (10 s)
        ({}, {"result_ttl": 0}, False),
        ({"result_ttl": 1}, {}, False),
        ({"result_ttl": 1}, {"result_ttl": 60}, True),  # its own TTL wins
        ({"failure_ttl": 5}, {}, False),  # it might fail...
        ({"cancelled_ttl": 5}, {}, False),  # ... or be cancelled
        ({"min_retention": 5}, {}, False),  # past max_retained, the cap purges it then
    ],
)
def test_a_submit_is_resent_only_if_its_job_outlasts_the_resends(
    make: Make, jobs: dict[str, float], options: dict[str, float], resent: bool
) -> None:
    """Invariant 5: a resend finds the first call's job by its nonce only while
    its record lasts, so a submit is resendable after an ambiguous failure only
    when the job is surely kept retry_deadline after it ends, however it ends."""
    client = make(retry_deadline=10.0, jobs=worqr.JobSettings(**jobs))
    assert submit_call(client, ["one"], **options).idempotent is resent
    assert submit_call(client, ["a", "b"], **options).idempotent is resent


@pytest.mark.parametrize("ending", ["finished", "failed", "cancelled"])
def test_a_unique_marker_is_held_while_live_and_released_when_it_ends(
    make: Make, wq: worqr.Worqr, ending: str
) -> None:
    first = wq.submit("q", "same", unique=True)
    second = wq.submit("q", "same", unique=True)
    assert second == worqr.JobRef("q", first.id, duplicate=True)
    assert not wq.submit("q", "other", unique=True).duplicate
    assert not wq.submit("q", "same").duplicate  # without unique: no marker asked for
    if ending == "cancelled":
        assert wq.cancel_job("q", first.id)
    else:
        worker = make(start=True)
        for process in take(worker, "q"):
            if process.job_id != first.id or ending == "finished":
                worker.internals.take_jobs("q", [(process, "n", b"")], 0)
            else:
                worker.internals.fail_job(process, mode="fail", delay=0, retries=0, error="Fail: x")
    assert wq.get_job("q", first.id).state == ending  # type: ignore[union-attr]
    third = wq.submit("q", "same", unique=True)
    assert not third.duplicate and third.id != first.id


def test_priorities_run_higher_first_and_equal_ones_in_order(make: Make, wq: worqr.Worqr) -> None:
    for name, priority in [
        ("low", -5),
        ("a", 0),
        ("urgent", 10),
        ("b", 0),
        ("high", 5),
        ("urgent2", 10),
        ("c", 0),
        ("lower", -7),
    ]:
        wq.submit("q", name, priority=priority)
    queued, _ = wq.get_jobs("q", "queued")
    expected = ["urgent", "urgent2", "high", "a", "b", "c", "low", "lower"]
    assert [job.payload for job in queued] == expected  # run order, as listed
    worker = make(start=True)
    assert [p.task for p in take(worker, "q", 8)] == expected


def test_delay_and_at_are_read_on_redis_clock(wq: worqr.Worqr) -> None:
    now = wq.server_time()
    later = wq.submit("q", "later", delay=30)
    at = wq.submit("q", "at", at=now + 60)
    past = wq.submit("q", "past", at=now - 60)  # already due: queued at once
    zero = wq.submit("q", "zero", delay=0)
    states = {ref.id: wq.get_job("q", ref.id) for ref in (later, at, past, zero)}
    assert states[later.id].state == "delayed"  # type: ignore[union-attr]
    assert now + 29.9 < states[later.id].due < now + 31  # type: ignore[union-attr,operator]
    assert states[at.id].due == pytest.approx(now + 60, abs=0.002)  # type: ignore[union-attr]
    assert states[past.id].state == states[zero.id].state == "queued"  # type: ignore[union-attr]
    delayed, cursor = wq.get_jobs("q", "delayed")
    assert [job.payload for job in delayed] == ["later", "at"] and cursor is None


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"delay": 1, "at": 5}, ValueError, "not both"),
        ({"delay": -1}, ValueError, "delay"),
        ({"delay": float("nan")}, ValueError, "delay"),
        ({"at": "tomorrow"}, TypeError, "at must be"),
        ({"priority": True}, TypeError, "priority"),
        ({"priority": 2_000_000}, ValueError, "priority"),
        ({"unique": 1}, TypeError, "unique"),
        ({"retries": -1}, ValueError, "retries"),
        ({"retries": 1.5}, TypeError, "retries"),
        ({"backoff": -2}, ValueError, "backoff"),
        ({"backoff": "1s"}, TypeError, "backoff"),
        ({"timeout": 0}, ValueError, "timeout"),
        ({"result_ttl": -1}, ValueError, "result_ttl"),
        ({"id": ""}, ValueError, "job id"),
        ({"id": "a\nb"}, ValueError, "control character"),
        ({"id": "x" * 257}, ValueError, "job id"),
        ({"id": 7}, TypeError, "job id"),
    ],
)
def test_bad_options_raise_before_anything_is_written(
    wq: worqr.Worqr,
    redis_client: redis.Redis,
    prefix: str,
    options: dict,
    error: type,
    message: str,
) -> None:
    with pytest.raises(error, match=message):
        wq.submit("q", "payload", **options)
    assert keys_of(redis_client, prefix) == []


def test_bad_payloads_write_nothing(
    wq: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    with pytest.raises(TypeError, match="must be str or bytes"):
        wq.submit("q", 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be str or bytes"):
        wq.submit_many("q", ["fine", None])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not one payload"):
        wq.submit_many("q", "abc")
    with pytest.raises(ValueError, match="unknown job state"):
        wq.get_jobs("q", "done")
    assert keys_of(redis_client, prefix) == []


def test_submit_many_keeps_order_across_script_calls(make: Make) -> None:
    client = make(jobs=worqr.JobSettings(submit_chunk=7))
    refs = client.submit_many("q", [f"p{i}" for i in range(30)], priority=1)
    assert len({ref.id for ref in refs}) == 30 and not any(ref.duplicate for ref in refs)
    page, cursor = client.get_jobs("q", "queued", limit=1000)
    assert [job.payload for job in page] == [f"p{i}" for i in range(30)] and cursor is None


def test_a_queue_holds_tasks_or_jobs_never_both(
    make: Make, wq: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    wq.enqueue("tasks", "t")
    with pytest.raises(worqr.WrongQueueKindError, match=r"'tasks'.*holds tasks") as caught:
        wq.submit("tasks", "job")
    assert caught.value.queue_kind == "tasks"
    assert isinstance(caught.value, ValueError)
    assert wq.count_tasks("tasks") == 1
    with pytest.raises(worqr.WrongQueueKindError, match="'tasks' holds tasks"):
        wq.get_job("tasks", "no such job")  # a miss on a task queue: the wrong kind
    assert not redis_client.exists(MeshKeys(prefix).queue("tasks").jobs)
    jobqueues = MeshKeys(prefix).jobqueues
    assert redis_client.smembers(jobqueues) == set()  # a refused submit lists nothing
    wq.submit("jobs", "job")
    assert redis_client.smembers(jobqueues) == {b"jobs"}
    with pytest.raises(worqr.WrongQueueKindError, match="job queue"):
        wq.enqueue("jobs", "task")
    worker = make(start=True)
    with pytest.raises(worqr.WrongQueueKindError):
        worker.dequeue("jobs")
    assert wq.count_jobs("jobs")["queued"] == 1 and wq.count_tasks("jobs") == 1
    # An emptied task queue may become a job queue.
    process = worker.dequeue("tasks")
    assert process is not None and worker.finish_process(process)
    assert not wq.submit("tasks", "now a job").duplicate


def test_server_time_is_redis_time(wq: worqr.Worqr, redis_client: redis.Redis) -> None:
    seconds, micros = redis_client.time()
    assert wq.server_time() == pytest.approx(seconds + micros / 1e6, abs=0.5)
    assert abs(wq.server_time() - time.time()) < 5  # the same machine here


def test_count_tasks_on_a_job_queue_counts_its_queued_jobs(make: Make, prefix: str) -> None:
    """Prioritised jobs wait outside the list and a cancelled job leaves its
    entry behind: the list's length is not the answer, the queued count is."""
    producer, reader = make(), make()
    producer.submit("jobs", "plain")
    producer.submit("jobs", "urgent", priority=5)
    producer.submit("jobs", "urgent too", priority=5)
    cancelled = producer.submit("jobs", "dropped")
    assert producer.cancel_job("jobs", cancelled.id)
    producer.submit("jobs", "later", delay=60)
    assert reader.count_tasks("jobs") == 3  # a fresh client, the kind not yet known
    assert reader.count_tasks("jobs") == producer.count_tasks("jobs") == 3


def test_a_job_queue_deleted_and_used_again_is_listed_again(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    client = make()
    client.submit("jobs", "one")
    client.delete_queue("jobs")
    assert redis_client.smembers(MeshKeys(prefix).jobqueues) == set()
    client.submit("jobs", "two")
    assert redis_client.smembers(MeshKeys(prefix).jobqueues) == {b"jobs"}
    assert client.get_queues() == ["jobs"]


def test_job_reads_on_a_task_queue_say_so(make: Make) -> None:
    """A job read that finds nothing on a queue holding tasks names the mistake
    instead of answering "no such job"; on an emptied task queue (which may
    become a job queue) nothing found is the answer."""
    client = make()
    client.enqueue("tasks", "t")
    id = "01J0000000000000000000000A"
    for read in (
        lambda: client.get_job("tasks", id),
        lambda: client.result("tasks", id, timeout=0),
        lambda: client.result("tasks", id, timeout=1),
        lambda: client.cancel_job("tasks", id),
        lambda: client.retry_job("tasks", id),
        lambda: client.count_jobs("tasks"),
        lambda: client.get_jobs("tasks", "queued"),
        lambda: client.get_jobs("tasks", "failed"),
    ):
        with pytest.raises(worqr.WrongQueueKindError, match="'tasks' holds tasks") as caught:
            read()
        assert caught.value.queue_kind == "tasks"
    assert client.count_tasks("tasks") == 1  # nothing changed
    worker = make(start=True)
    process = worker.dequeue("tasks")
    assert process is not None and worker.finish_process(process)
    assert client.get_job("tasks", id) is None
    assert client.count_jobs("tasks") == dict.fromkeys(client.count_jobs("tasks"), 0)
    assert client.get_jobs("tasks", "queued") == ([], None)
