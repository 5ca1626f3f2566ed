"""Every public method's numeric, flag and name options, fed extreme values by
Hypothesis: NaN, infinities, numbers past what Redis and the millisecond
arithmetic hold, negative and huge integers, booleans, strings and names
that break key naming. Each must raise `ValueError` or `TypeError` before
anything is written: the keys under the test's prefix, and their values, are
the same after the call as before it.

The async client runs the same plans (`tests/core/test_facades.py` checks
the generated sync copy), so the sync client stands for both."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

import worqr
from tests.support.clients import Factory
from tests.support.mesh import keys_under
from worqr._checks import MAX_COUNT, MAX_EPOCH_SECONDS, MAX_SECONDS

Call = Callable[[Any], object]

FLOAT_EXTREMES = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 10.0**20])
INT_EXTREMES = st.sampled_from([2**31, 2**63, 10**30, 10**400, -(2**63), -(10**30)])
WRONG_TYPES = st.sampled_from([True, False, "1", b"1", [1], {"n": 1}, 1j])


def too_many_seconds(high: float = MAX_SECONDS) -> st.SearchStrategy[float]:
    """Finite numbers past ``high``: as floats, and as ints (even ones too
    large for a float)."""
    return st.one_of(
        st.floats(min_value=high, exclude_min=True, allow_infinity=False, allow_nan=False),
        st.integers(min_value=int(high) + 1),
    )


def bad_seconds(
    high: float = MAX_SECONDS, *, low: float = 0.0, above: bool = False
) -> st.SearchStrategy[Any]:
    """What no option of seconds from ``low`` (excluded when ``above``) to
    ``high`` takes."""
    below = st.floats(max_value=low, exclude_max=not above, allow_nan=False, allow_infinity=False)
    return st.one_of(FLOAT_EXTREMES, too_many_seconds(high), below, WRONG_TYPES)


def bad_count(low: int = 0, high: int = MAX_COUNT) -> st.SearchStrategy[Any]:
    """What no count takes (a float, even a whole one, is no int)."""
    return st.one_of(
        INT_EXTREMES,
        st.integers(max_value=low - 1),
        st.integers(min_value=high + 1),
        FLOAT_EXTREMES,
        st.just(1.0),
        WRONG_TYPES,
    )


BAD_NAMES = st.one_of(
    st.sampled_from(["", "x" * (worqr.MAX_NAME_CHARS + 1), "a{b", "}", "nul\x00", "c1\x85"]),
    st.text(min_size=1).map(lambda text: text + "{"),
    st.characters(categories=["Cc", "Cs"]).map(lambda char: f"q{char}"),
    st.sampled_from([None, 7, b"q", ["q"]]),
)
BAD_JOB_IDS = st.one_of(
    st.sampled_from(["", "x" * 257, "a\nb", "del\x7f", "s\ud800"]),
    st.sampled_from([7, 7.5, b"id"]),  # (None is no id: submit makes one)
)


def submit_option(name: str) -> Call:
    return lambda client_value: client_value[0].submit("q", "p", **{name: client_value[1]})


def option_calls() -> Iterator[tuple[str, st.SearchStrategy[Any], Call]]:
    """(what, bad values, a call taking (client, value)) for every option."""
    for name in ("delay", "result_ttl"):
        yield f"submit({name}=)", bad_seconds(), submit_option(name)
    yield "submit(timeout=)", bad_seconds(above=True), submit_option("timeout")
    yield "submit(at=)", bad_seconds(MAX_EPOCH_SECONDS), submit_option("at")
    yield "submit(backoff=)", bad_seconds(), submit_option("backoff")
    yield "submit(priority=)", bad_count(-1_000_000, 1_000_000), submit_option("priority")
    yield "submit(retries=)", bad_count(), submit_option("retries")
    yield "submit(unique=)", st.sampled_from([1, 0, "yes", None]), submit_option("unique")
    yield (
        "submit_many(delay=)",
        bad_seconds(),
        lambda cv: cv[0].submit_many("q", ["a", "b"], delay=cv[1]),
    )
    for field in ("base", "max"):
        yield f"Backoff({field}=)", bad_seconds(), lambda cv, f=field: worqr.Backoff(**{f: cv[1]})
    yield "Backoff(factor=)", bad_seconds(1000.0, low=1.0), lambda cv: worqr.Backoff(factor=cv[1])
    yield "Backoff(jitter=)", bad_seconds(1.0), lambda cv: worqr.Backoff(jitter=cv[1])
    yield "result(timeout=)", bad_seconds(), lambda cv: cv[0].result("q", "j", timeout=cv[1])
    yield (
        "get_jobs(limit=)",
        bad_count(1, 1000),
        lambda cv: cv[0].get_jobs("q", "queued", limit=cv[1]),
    )
    yield (
        "get_jobs(cursor=)",
        st.one_of(
            st.text().filter(lambda t: not (t.isascii() and t.isdigit() and len(t) < 20)),
            WRONG_TYPES.filter(lambda value: value != "1"),  # "1" is a cursor
        ),
        lambda cv: cv[0].get_jobs("q", "active", cursor=cv[1]),
    )
    yield (
        "configure_queue(max_active=)",
        bad_count(1),
        lambda cv: cv[0].configure_queue("q", max_active=cv[1]),
    )
    yield (
        "configure_queue(max_recoveries=)",
        bad_count(-1),
        lambda cv: cv[0].configure_queue("q", max_recoveries=cv[1]),
    )
    yield (
        "configure_queue(rate=(n, _))",
        bad_count(1),
        lambda cv: cv[0].configure_queue("q", rate=(cv[1], 1.0)),
    )
    yield (
        "configure_queue(rate=(_, seconds))",
        bad_seconds(30 * 24 * 3600, low=0.001),
        lambda cv: cv[0].configure_queue("q", rate=(5, cv[1])),
    )
    yield (
        "schedule(every=)",
        bad_seconds(above=True),
        lambda cv: cv[0].schedule("q", "s", every=cv[1]),
    )
    yield (
        "schedule(result_ttl=)",
        bad_seconds(),
        lambda cv: cv[0].schedule("q", "s", every=60, result_ttl=cv[1]),
    )
    yield (
        "submit_chain(Step(delay=))",
        bad_seconds(),
        lambda cv: cv[0].submit_chain([worqr.Step("q"), worqr.Step("r", delay=cv[1])]),
    )
    yield (
        "submit_flow(FlowJob(timeout=))",
        bad_seconds(above=True),
        lambda cv: cv[0].submit_flow(
            worqr.FlowJob("q", children=[worqr.FlowJob("r", timeout=cv[1])])
        ),
    )
    yield "RateLimited(seconds)", bad_seconds(above=True), lambda cv: worqr.RateLimited(cv[1])
    yield "Retry(delay)", bad_seconds(), lambda cv: worqr.Retry(cv[1])
    for field in ("ttl", "poll_interval", "socket_timeout", "retry_deadline", "max_blocked"):
        yield (
            f"Settings({field}=)",
            bad_seconds(above=True),
            lambda cv, f=field: worqr.Settings(**{f: cv[1]}),
        )
    for field in ("max_task_bytes", "failed_max", "requeue_chunk"):
        yield f"Settings({field}=)", bad_count(1), lambda cv, f=field: worqr.Settings(**{f: cv[1]})
    for field in ("result_ttl", "failure_ttl", "cancelled_ttl", "min_retention", "relay_lease"):
        yield (
            f"JobSettings({field}=)",
            bad_seconds(),
            lambda cv, f=field: worqr.JobSettings(**{f: cv[1]}),
        )
    for field in ("max_retained", "purge_budget", "submit_chunk"):
        yield (
            f"JobSettings({field}=)",
            bad_count(1),
            lambda cv, f=field: worqr.JobSettings(**{f: cv[1]}),
        )
    yield (
        "WorkerSettings(concurrency=)",
        bad_count(1),
        lambda cv: worqr.WorkerSettings(concurrency=cv[1]),
    )
    yield (
        "WorkerSettings(grace_period=)",
        bad_seconds(),
        lambda cv: worqr.WorkerSettings(grace_period=cv[1]),
    )
    yield "WorkerSettings(batch=)", bad_count(1), lambda cv: worqr.WorkerSettings(batch=cv[1])
    yield "enqueue(queue)", BAD_NAMES, lambda cv: cv[0].enqueue(cv[1], "task")
    yield "submit(queue)", BAD_NAMES, lambda cv: cv[0].submit(cv[1], "p")
    yield "configure_queue(queue)", BAD_NAMES, lambda cv: cv[0].configure_queue(cv[1], max_active=2)
    yield "schedule(queue)", BAD_NAMES, lambda cv: cv[0].schedule(cv[1], "s", every=60)
    yield "submit(id=)", BAD_JOB_IDS, lambda cv: cv[0].submit("q", "p", id=cv[1])
    yield "cancel_job(id)", BAD_JOB_IDS, lambda cv: cv[0].cancel_job("q", cv[1])
    yield "retry_job(id)", BAD_JOB_IDS, lambda cv: cv[0].retry_job("q", cv[1])
    yield "get_job(id)", BAD_JOB_IDS, lambda cv: cv[0].get_job("q", cv[1])
    yield from bulk_calls()


def bad_state(*good: str) -> st.SearchStrategy[Any]:
    """What a state option other than ``good`` is (another state, any text, no str)."""
    return st.one_of(
        st.text().filter(lambda text: text not in good),
        st.sampled_from([1, b"failed", ["failed"]]),
    )


def bulk_calls() -> Iterator[tuple[str, st.SearchStrategy[Any], Call]]:
    """The bulk operations, update_job and delete_queue(if_idle=)."""
    live = ("delayed", "queued", "retrying", "waiting", "active")
    yield "cancel_jobs(state=)", bad_state(*live), lambda cv: cv[0].cancel_jobs("q", state=cv[1])
    yield (
        "retry_jobs(state=)",
        bad_state("failed", "cancelled"),
        lambda cv: cv[0].retry_jobs("q", state=cv[1]),
    )
    yield "retry_jobs(limit=)", bad_count(1), lambda cv: cv[0].retry_jobs("q", limit=cv[1])
    yield "promote_jobs(limit=)", bad_count(1), lambda cv: cv[0].promote_jobs("q", limit=cv[1])
    yield (
        "purge_jobs(state)",
        bad_state("finished", "failed", "cancelled"),
        lambda cv: cv[0].purge_jobs("q", cv[1]),
    )
    yield (
        "purge_jobs(older_than=)",
        bad_seconds(),
        lambda cv: cv[0].purge_jobs("q", "failed", older_than=cv[1]),
    )
    yield (
        "purge_jobs(limit=)",
        bad_count(1),
        lambda cv: cv[0].purge_jobs("q", "failed", limit=cv[1]),
    )
    yield (
        "update_job(priority=)",
        bad_count(-1_000_000, 1_000_000),
        lambda cv: cv[0].update_job("q", "j", priority=cv[1]),
    )
    yield "update_job(delay=)", bad_seconds(), lambda cv: cv[0].update_job("q", "j", delay=cv[1])
    yield (
        "update_job(at=)",
        bad_seconds(MAX_EPOCH_SECONDS),
        lambda cv: cv[0].update_job("q", "j", at=cv[1]),
    )
    yield (
        "update_job(delay=, at=)",
        st.floats(0, 100),
        lambda cv: cv[0].update_job("q", "j", delay=cv[1], at=cv[1]),
    )
    yield (
        "update_job(payload=)",
        st.sampled_from([None, 7, ["x"], "\ud800"]),
        lambda cv: cv[0].update_job("q", "j", payload=cv[1]),
    )
    yield "update_job(id)", BAD_JOB_IDS, lambda cv: cv[0].update_job("q", cv[1], priority=1)
    yield "cancel_jobs(queue)", BAD_NAMES, lambda cv: cv[0].cancel_jobs(cv[1])
    yield (
        "delete_queue(if_idle=)",
        st.sampled_from([1, 0, "yes", None]),
        lambda cv: cv[0].delete_queue("q", if_idle=cv[1]),
    )


CALLS = list(option_calls())


def snapshot(raw: redis.Redis, prefix: str) -> dict[bytes, bytes | None]:
    """Every key of the mesh with its value (DUMP: any type, byte for byte)."""
    return {key: raw.dump(key) for key in keys_under(raw, prefix)}  # type: ignore[misc]


@pytest.mark.slow
@pytest.mark.parametrize(("what", "values", "call"), CALLS, ids=[what for what, _, _ in CALLS])
def test_an_extreme_option_raises_before_anything_is_written(
    make: Factory,
    redis_client: redis.Redis,
    prefix: str,
    what: str,
    values: st.SearchStrategy[Any],
    call: Call,
) -> None:
    client = make()
    client.submit("q", "already here")  # a queue with something in it
    before = snapshot(redis_client, prefix)

    @settings(max_examples=25, deadline=None, database=None, derandomize=True)
    @given(value=values)
    def check(value: Any) -> None:
        with pytest.raises((ValueError, TypeError)):
            call((client, value))
        assert snapshot(redis_client, prefix) == before, (what, value)

    check()
