"""`cancel_jobs(queue, state=, group=)`: one group's jobs cancelled in bounded
chunks with exact counts, the other groups and the ungrouped jobs left as they
are, the ring consistent; a bad group refused before anything is written
(against a real redis-server)."""

from __future__ import annotations

import pytest
import redis

from tests.client.test_extreme_options import snapshot
from worqr._core.bulk import BULK_CHUNK

from .test_group_bulk import assert_no_group_key, assert_round_robin, drain, group_counts
from .test_groups import Make, take
from .test_lifecycle import counts


def test_cancel_one_group_in_chunks_leaves_the_others(
    make: Make, redis_client: redis.Redis, prefix: str
) -> None:
    producer, worker = make(), make(start=True)
    big = BULK_CHUNK + 300  # more than one chunk in the group cancelled
    producer.submit_many("q", [f"a:{i}" for i in range(big)], group="a")
    producer.submit_many("q", [f"a:p{i}" for i in range(50)], group="a", priority=4)
    producer.submit_many("q", [f"b:{i}" for i in range(20)], group="b")
    producer.submit_many("q", [f"u:{i}" for i in range(20)])
    producer.submit_many("q", [f"a:d{i}" for i in range(30)], group="a", delay=600)
    producer.submit_many("q", [f"b:d{i}" for i in range(30)], group="b", delay=600)
    assert producer.cancel_jobs("q", state="queued", group="a") == big + 50
    assert producer.count_jobs("q") == counts(queued=40, delayed=60, cancelled=big + 50)
    assert group_counts(producer) == {"a": (0, 30, 0), "b": (20, 30, 0)}
    assert producer.cancel_jobs("q", state="delayed", group="b") == 30
    assert group_counts(producer) == {"a": (0, 30, 0), "b": (20, 0, 0)}
    assert producer.count_jobs("q")["delayed"] == 30
    seen = drain(worker)  # the ring holds b and the ungrouped jobs, once each
    assert sorted(seen) == sorted([f"b:{i}" for i in range(20)] + [f"u:{i}" for i in range(20)])
    assert_round_robin(seen, 2)
    assert producer.cancel_jobs("q", group="a") == 30  # every state of a
    assert producer.count_jobs("q") == counts(finished=40, cancelled=big + 110)
    assert_no_group_key(redis_client, prefix, producer)


def test_cancel_one_group_over_every_state(make: Make) -> None:
    producer, worker = make(), make(start=True)
    for g in ("a", "b"):
        producer.submit_many("q", [f"{g}:{i}" for i in range(5)], group=g)
        producer.submit_many("q", [f"{g}:d{i}" for i in range(1200)], group=g, delay=600)
    held = take(worker, 4)  # two of each
    assert sorted(p.task[0] for p in held) == ["a", "a", "b", "b"]  # type: ignore[index]
    assert producer.cancel_jobs("q", group="a") == 1205
    assert group_counts(producer) == {"b": (3, 1200, 2)}
    assert producer.count_jobs("q") == counts(queued=3, delayed=1200, active=2, cancelled=1205)


def test_a_bad_group_writes_nothing(make: Make, redis_client: redis.Redis, prefix: str) -> None:
    producer = make()
    producer.submit_many("q", ["a:1"], group="a")
    before = snapshot(redis_client, prefix)
    with pytest.raises(ValueError, match="group"):
        producer.cancel_jobs("q", group="")
    with pytest.raises(ValueError, match="group"):
        producer.cancel_jobs("q", group="a\n")
    with pytest.raises(TypeError, match="group"):
        producer.cancel_jobs("q", group=1)  # type: ignore[arg-type]
    assert snapshot(redis_client, prefix) == before
