"""`get_jobs(queue, state, group=)` on a queue with fair-share groups: the queued
listing names every queued job once over its pages (ungrouped first, then group
by group), also with concurrent takes; ``group=`` lists one group's jobs
(against a real redis-server)."""

from __future__ import annotations

import pytest

import worqr
from worqr._core.queued_pages import GROUPED_BASE, pack_grouped, unpack_grouped

from .test_groups import Make, finish, take


def listed(producer: worqr.Worqr, state: str = "queued", limit: int = 7, **opts: str) -> list[str]:
    """Payloads of every page of ``state``, in order."""
    found: list[str] = []
    cursor: str | None = None
    while True:
        page, cursor = producer.get_jobs("q", state, limit=limit, cursor=cursor, **opts)
        found += [str(job.payload) for job in page]
        if cursor is None:
            return found


def fill(producer: worqr.Worqr, groups: int, per_group: int) -> set[str]:
    """``per_group`` jobs in each of ``groups`` groups (the first a priority) and
    as many ungrouped; their payloads."""
    names = set()
    for g in range(groups):
        batch = [f"g{g}:{i}" for i in range(per_group)]
        producer.submit("q", batch[0], group=f"g{g}", priority=3)
        producer.submit_many("q", batch[1:], group=f"g{g}")
        names |= set(batch)
    ungrouped = [f"u:{i}" for i in range(per_group)]
    producer.submit("q", "u:low", priority=-1)
    producer.submit_many("q", ungrouped)
    return names | set(ungrouped) | {"u:low"}


@pytest.mark.parametrize(("groups", "limit"), [(3, 4), (40, 7), (300, 64)])
def test_every_queued_job_is_listed_once(make: Make, groups: int, limit: int) -> None:
    producer = make()
    names = fill(producer, groups, 5)
    found = listed(producer, limit=limit)
    assert len(found) == len(set(found))
    assert set(found) == names
    assert producer.count_jobs("q")["queued"] == len(names)
    ungrouped = [name for name in found if name.startswith("u:")]
    assert found[: len(ungrouped)] == ungrouped  # the ungrouped ones first
    assert ungrouped[-1] == "u:low"  # in run order: a negative priority last
    for g in range(groups):  # each group's jobs together, in run order
        mine = [name for name in found if name.startswith(f"g{g}:")]
        assert mine == [f"g{g}:{i}" for i in range(5)]
        first = found.index(mine[0])
        assert found[first : first + 5] == mine


def test_concurrent_takes_list_no_job_twice(make: Make) -> None:
    producer, worker = make(), make(start=True)
    names = fill(producer, 30, 6)
    found: list[str] = []
    taken: set[str] = set()
    cursor: str | None = None
    while True:
        page, cursor = producer.get_jobs("q", "queued", limit=5, cursor=cursor)
        found += [str(job.payload) for job in page]
        held = take(worker, 3)  # between every two pages
        taken |= {str(p.task) for p in held}
        finish(worker, held)
        if cursor is None:
            break
    assert len(found) == len(set(found))  # a take moves entries forward: none comes twice
    assert set(found) <= names
    assert taken and len(found) + len(taken) >= len(names) // 2  # the pass got through


def test_a_group_filter_lists_that_group_only(make: Make) -> None:
    producer, worker = make(), make(start=True)
    fill(producer, 4, 9)
    assert listed(producer, group="g2", limit=4) == [f"g2:{i}" for i in range(9)]
    assert listed(producer, group="nobody") == []
    held = take(worker, 8)  # two of each group's (round robin), the ungrouped too
    active = listed(producer, "active", group="g1")
    assert active and all(name.startswith("g1:") for name in active)
    assert sorted(active) == sorted(str(p.task) for p in held if str(p.task).startswith("g1:"))
    finish(worker, held)
    assert set(listed(producer, "finished", group="g1")) == set(active)


def test_a_bad_group_is_refused(make: Make) -> None:
    producer = make()
    with pytest.raises(ValueError, match="group"):
        producer.get_jobs("q", "queued", group="")
    with pytest.raises(TypeError, match="group"):
        producer.get_jobs("q", "queued", group=3)  # type: ignore[arg-type]


def test_grouped_cursors_stay_decimal_below_10_19() -> None:
    top = pack_grouped((1 << 24) - 1, (1 << 11) - 1, (1 << 28) - 1)
    assert top < 10**19 and unpack_grouped(top) == ((1 << 24) - 1, (1 << 11) - 1, (1 << 28) - 1)
    assert unpack_grouped(pack_grouped(5, 3, 17)) == (5, 3, 17)
    assert pack_grouped(0, 0, 0) == GROUPED_BASE
    with pytest.raises(ValueError, match="group="):
        pack_grouped(1 << 24, 0, 0)


@pytest.mark.parametrize("limit", [1, 3, 10, 97])
def test_groups_of_every_size_with_tombstones_are_listed_once(make: Make, limit: int) -> None:
    producer = make()
    refs = {}
    for g in range(40):
        size = 1 + (g * 7) % 23
        batch = [f"g{g}:{i}" for i in range(size)]
        for name, ref in zip(batch, producer.submit_many("q", batch, group=f"g{g}"), strict=True):
            refs[name] = ref.id
    cancelled = {name for k, name in enumerate(sorted(refs)) if k % 5 == 0}
    for name in cancelled:  # priority 0: each leaves a tombstone in its group's list
        assert producer.cancel_job("q", refs[name])
    found = listed(producer, limit=limit)
    assert len(found) == len(set(found))
    assert set(found) == set(refs) - cancelled
