"""A job record's two fields (``lua/lib/jobs.lua``): the JSON and the hot string
merge into one dict the way the scripts' `load_job` merges them."""

from __future__ import annotations

import redis

import worqr
from worqr._core.job_record import HOT_SUFFIX, hot_field, merge_record
from worqr._keys import MeshKeys


def test_a_hot_string_with_every_field_overrides_the_json() -> None:
    record = merge_record(b'{"c":5,"f":1,"r":0,"s":"q"}', b"f12|3|1000|1200|9000|s|1|w.7.|odd|pid")
    assert record == {
        "c": 5, "f": 1, "r": 0,
        "s": "f", "l": 12, "a": 3, "t": 1000, "e": 1200, "X": 9000, "y": "s",
        "p": "w.7.|odd|pid",  # the pid is last: it may hold the separator
    }  # fmt: skip


def test_empty_hot_fields_are_absent_and_a_missing_hot_string_changes_nothing() -> None:
    assert merge_record('{"c":5}', "q4|0|||||1|") == {"c": 5, "s": "q", "l": 4, "a": 0}
    assert merge_record('{"c":5,"s":"q"}', None) == {"c": 5, "s": "q"}
    assert hot_field("job-1") == "job-1" + HOT_SUFFIX and HOT_SUFFIX == "\x01"


def test_the_scripts_write_what_get_job_reads(
    redis_client: redis.Redis, redis_url: str, prefix: str
) -> None:
    """A take and a plain finish edit only the hot string; the merged record is
    the job `get_job` reports, and the JSON field never holds a hot key."""
    with worqr.Worqr(redis_url, prefix=prefix) as client:
        ref = client.submit("q", "x")
        client.start_worker()
        _, [process], _ = client.internals.take_jobs("q", [], 1)
        keys = MeshKeys(prefix).queue("q")
        active_json = redis_client.hget(keys.jobs, ref.id)
        hot = redis_client.hget(keys.jobs, hot_field(ref.id))
        assert hot is not None and hot.startswith(b"a") and hot.endswith(process.id.encode())
        flags, _, _ = client.internals.take_jobs("q", [(process, "s", b"done")], 0)
        assert flags == [True]
        assert redis_client.hget(keys.jobs, ref.id) == active_json  # the JSON was not rewritten
        raw, hot = redis_client.hmget(keys.jobs, [ref.id, hot_field(ref.id)])
        assert raw is not None
        record = merge_record(raw, hot)
        info = client.get_job("q", ref.id)
        assert info is not None and info.state == "finished" and info.result == "done"
        assert (record["s"], record["a"], record["y"]) == ("f", info.attempts, "s") == ("f", 1, "s")
        assert record["t"] / 1000 == info.started and record["e"] / 1000 == info.ended
        assert not set(merge_record(raw, None)) & set("slateXyp")
