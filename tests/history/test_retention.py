"""Where the history lives in Redis: every key in the queue's slot with a TTL
(Redis expires it, no cleaner), minutes kept 8 hours and ten minutes 72, and
72 hours of busy minutes within the 200 KB budget (`benchmarks.history`)."""

from __future__ import annotations

import redis

import worqr
from benchmarks.history import MEMORY_BUDGET, busy_tally, memory


def test_72_hours_of_busy_minutes_fit_the_memory_budget(redis_url: str) -> None:
    got = memory(redis_url)
    assert got["points"] == 8 * 60 + 72 * 6  # every minute of 8 h, every ten of 72 h
    assert isinstance(got["memory_usage"], int) and got["memory_usage"] <= MEMORY_BUDGET


def test_every_key_expires_and_old_minutes_read_as_ten_minutes(
    wq: worqr.Worqr, redis_client: redis.Redis, prefix: str
) -> None:
    now = int(wq.internals.server_time())
    minute = now - now % 60
    ten_hours_ago = minute - 10 * 3600
    wq.internals.record_history("q", [(ten_hours_ago, busy_tally(0)), (minute, busy_tally(1))])
    keys = list(redis_client.scan_iter(match=f"{{{prefix}:q}}:*"))
    assert keys and all(b":history:" in key for key in keys)
    for key in keys:
        ttl = redis_client.ttl(key)
        step = int(key.decode().split(":history:")[1].split(":")[0])
        longest = 9 * 3600 if step == 60 else 84 * 3600  # retention + the block's span
        assert 0 < ttl <= longest, (key, ttl)
    # The minute ten hours ago is gone from the minutes (its hour expired at once)...
    hour = ten_hours_ago - ten_hours_ago % 3600
    assert not redis_client.exists(f"{{{prefix}:q}}:history:60:{hour}")
    assert [p.time for p in wq.get_history("q", since=8 * 3600)] == [minute]
    # ...and kept in its ten minutes.
    coarse = wq.get_history("q", since=11 * 3600)
    assert [p.time for p in coarse] == [ten_hours_ago - ten_hours_ago % 600, minute - minute % 600]
    assert all(p.step == 600 for p in coarse)
