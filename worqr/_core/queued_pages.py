"""`get_jobs(queue, "queued")`'s pages: the ready entries of a job queue in
run order, then those of each fair-share group (lua/lib/group.lua), so that
one pass of the cursor lists every queued job once.

The order: the queue's own (ungrouped) ready keys, as the take serves them
inside a group (the priority zset's positive priorities, the list from its
front, then the negative priorities), then the groups one by one in the order
``HSCAN`` of the ``grp`` hash gives them, each group's entries in that same
order. A cursor is one number (decimal digits below 10**19, see
`jobs_read.cursor_position`):

- below `GROUPED_BASE`: ``offset * 3 + segment`` in the ungrouped keys;
- from `GROUPED_BASE`: the HSCAN cursor of the page of groups, the group's
  index in that page and ``offset * 3 + segment`` inside the group, packed in
  `SCAN_BITS`, `INDEX_BITS` and `INNER_BITS` bits.

With a group named, the cursor is ``offset * 3 + segment`` in that group's keys.

Offsets count entries from the front: a take pops at the front, so jobs taken
between two pages move what follows forward and may be passed over, never
listed twice (as in the ungrouped listing, where only a job submitted with a
higher priority than the page's may come back). A group page is scanned again
for the next page of jobs: a group added meanwhile may or may not be listed,
and one emptied moves the index along by one (a group then passed over).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._keys import QueueKeys
from .calls import Call, Pinned, Plan, command
from .failures import checked_replies
from .state import text

MAX_OFFSET = 2**53  # a page's offset (Redis takes up to 2**63; 2**53 stays exact in JSON)
QUEUED_SEGMENTS = ("hi", "list", "lo")  # priority > 0, priority 0, priority < 0
GROUPED_BASE = len(QUEUED_SEGMENTS) * MAX_OFFSET
"""The first cursor of the groups' part: past every ungrouped position."""
INNER_BITS = 28  # offset * 3 + segment inside a group: up to 89 million entries
INDEX_BITS = 11  # a group's index in its HSCAN page (pages of GROUP_SCAN, or a small hash whole)
SCAN_BITS = 24  # HSCAN's cursor: below the hash table's size, 16 million buckets
GROUP_SCAN = 100
"""The COUNT of each HSCAN of the groups."""

Page = tuple[list[str], int | None]
"""Entries, and where the next page begins (None: nothing after them)."""


def pack_grouped(scan: int, index: int, inner: int) -> int:
    """The cursor of a position in the groups' part; ValueError past its bounds
    (a hash table of more than 2**24 buckets, a group of more than 89 million
    ready entries), which this listing does not page."""
    if scan >= 1 << SCAN_BITS or index >= 1 << INDEX_BITS or inner >= 1 << INNER_BITS:
        raise ValueError(
            f"queued jobs past this point cannot be paged (groups' scan {scan}, index "
            f"{index}, offset {inner // 3}): list one group at a time with group="
        )
    return GROUPED_BASE + (((scan << INDEX_BITS) | index) << INNER_BITS | inner)


def unpack_grouped(position: int) -> tuple[int, int, int]:
    """(scan, index, inner) of a cursor from `GROUPED_BASE`."""
    value = position - GROUPED_BASE
    inner = value & ((1 << INNER_BITS) - 1)
    index = (value >> INNER_BITS) & ((1 << INDEX_BITS) - 1)
    return value >> (INNER_BITS + INDEX_BITS), index, inner


def group_epoch(keys: QueueKeys) -> Plan[str | None]:
    """The epoch the queue's group ready keys are named with (lua/lib/group:
    the config's ``groups``), None while it has no groups. A page reads it
    again: groups emptied and begun again, or a queue deleted and made again,
    name their keys anew, and the listing goes on in the new ones."""
    epoch = yield command("HGET", keys.config, "groups")
    return None if epoch is None else text(epoch)


def segments_page(tasks: str, prio: str, limit: int, position: int) -> Plan[Page]:
    """Up to ``limit`` entries of one set of ready keys (a priority zset and a
    list, lib/ready) from ``position`` (``offset * 3 + segment``)."""
    offset, index = divmod(position, len(QUEUED_SEGMENTS))
    if offset >= MAX_OFFSET:
        return [], None
    segment, entries = QUEUED_SEGMENTS[index], list[str]()
    while len(entries) < limit:
        want = limit - len(entries)
        if segment == "hi":
            found = yield command("ZRANGEBYSCORE", prio, "-inf", "(0", "LIMIT", offset, want)
        elif segment == "lo":
            found = yield command("ZRANGEBYSCORE", prio, "0", "+inf", "LIMIT", offset, want)
        else:  # the list's front is its right end
            found = yield command("LRANGE", tasks, -(offset + want), -(offset + 1))
            found = list(reversed(found))
        entries += [text(entry) for entry in found]
        if len(found) == want:
            offset += want
            break
        following = QUEUED_SEGMENTS.index(segment) + 1
        if following == len(QUEUED_SEGMENTS):
            return entries, None
        segment, offset = QUEUED_SEGMENTS[following], 0
    return entries, offset * len(QUEUED_SEGMENTS) + QUEUED_SEGMENTS.index(segment)


def _queued_groups(found: Any) -> list[tuple[str, int]]:
    """(group, queued count) of an HSCAN page of ``grp``, in page order; the
    member '' (the queue's ungrouped jobs, listed first) left out."""
    pairs: Sequence[tuple[Any, Any]]
    if isinstance(found, dict):
        pairs = list(found.items())
    else:
        pairs = list(zip(found[0::2], found[1::2], strict=True))
    return [(text(name), int(json.loads(raw).get("q", 0))) for name, raw in pairs]


def _split_group(segments: list[list[str]], want: int) -> Page:
    """Up to ``want`` entries of one group from its start, given its three
    segments each read with ``LIMIT want`` (so one shorter than ``want`` is
    all there is): as `segments_page` would page them."""
    entries = list[str]()
    for index, segment in enumerate(segments):
        need = want - len(entries)
        taken = segment[:need]
        entries += taken
        if len(taken) == need:
            return entries, len(taken) * len(QUEUED_SEGMENTS) + index
    return entries, None


def _group_reads(keys: QueueKeys, epoch: str, name: str, want: int) -> tuple[Call, ...]:
    """The reads of a group's three segments from its start, ``want`` each."""
    prio, ready = keys.group_prio(epoch, name), keys.group_ready(epoch, name)
    return (
        command("ZRANGEBYSCORE", prio, "-inf", "(0", "LIMIT", 0, want, key=prio),
        command("LRANGE", ready, -want, -1, key=ready),
        command("ZRANGEBYSCORE", prio, "0", "+inf", "LIMIT", 0, want, key=prio),
    )


def _whole_groups(
    keys: QueueKeys, epoch: str, names: list[str], want: int
) -> Plan[list[list[list[str]]]]:
    """Each group's three segments from its start (``want`` entries each at
    most), the list's front first: every group in one round trip."""
    request = Pinned(
        tuple(call for name in names for call in _group_reads(keys, epoch, name, want))
    )
    replies = checked_replies(request, (yield request))
    found = [[text(entry) for entry in reply] for reply in replies]
    return [[found[i], found[i + 1][::-1], found[i + 2]] for i in range(0, len(found), 3)]


def _next_groups(page: list[tuple[str, int]], index: int, want: int) -> list[int]:
    """The indexes of the groups with queued jobs from ``index`` on whose
    queued counts first reach ``want`` (all of them when they do not)."""
    chosen, queued = [], 0
    for i in range(index, len(page)):
        if page[i][0] and page[i][1] > 0:
            chosen.append(i)
            queued += page[i][1]
            if queued >= want:
                break
    return chosen


def _whole_groups_page(
    keys: QueueKeys,
    epoch: str,
    page: list[tuple[str, int]],
    scan: int,
    index: int,
    entries: list[str],
    limit: int,
) -> Plan[tuple[int, int | None]]:
    """Entries of the groups of ``page`` from ``index``, each from its start,
    added to ``entries`` up to ``limit``: (the index of the next group, the
    cursor when the page of jobs ended inside a group, else None)."""
    while index < len(page) and len(entries) < limit:
        want = limit - len(entries)
        chosen = _next_groups(page, index, want)
        if not chosen:
            return len(page), None
        read = yield from _whole_groups(keys, epoch, [page[i][0] for i in chosen], want)
        for i, segments in zip(chosen, read, strict=True):
            got, inner_after = _split_group(segments, limit - len(entries))
            entries += got
            if inner_after is not None:
                return i, pack_grouped(scan, i, inner_after)
            index = i + 1
    return index, None


def groups_page(keys: QueueKeys, limit: int, position: int) -> Plan[Page]:
    """Up to ``limit`` entries of the groups' ready keys from ``position`` (a
    cursor from `GROUPED_BASE`). A group begun on an earlier page goes on with
    `segments_page`; the following ones are read together in one round trip,
    as many as their queued counts say fill the page."""
    epoch = yield from group_epoch(keys)
    if epoch is None:
        return [], None  # no groups (any more)
    scan, index, inner = unpack_grouped(position)
    entries = list[str]()
    while True:
        after, found = yield command("HSCAN", keys.groups, scan, "COUNT", GROUP_SCAN)
        page = _queued_groups(found)
        if inner and index < len(page):
            name = page[index][0]
            got, inner_after = yield from segments_page(
                keys.group_ready(epoch, name), keys.group_prio(epoch, name), limit, inner
            )
            entries += got
            if inner_after is not None:  # the page is full inside this group
                return entries, pack_grouped(scan, index, inner_after)
            index += 1
        index, cursor = yield from _whole_groups_page(
            keys, epoch, page, scan, index, entries, limit
        )
        if cursor is not None:
            return entries, cursor
        if len(entries) == limit and index < len(page):
            return entries, pack_grouped(scan, index, 0)
        scan, index, inner = int(after), 0, 0
        if scan == 0:
            return entries, None
        if len(entries) == limit:
            return entries, pack_grouped(scan, 0, 0)


def queued_page(keys: QueueKeys, limit: int, position: int, group: str | None) -> Plan[Page]:
    """One page of queued entries (the order and cursors in this module's doc)."""
    if group is not None:
        epoch = yield from group_epoch(keys)
        if epoch is None:
            return [], None  # no groups: none of its jobs is queued
        return (
            yield from segments_page(
                keys.group_ready(epoch, group), keys.group_prio(epoch, group), limit, position
            )
        )
    if position >= GROUPED_BASE:
        return (yield from groups_page(keys, limit, position))
    entries, after = yield from segments_page(keys.tasks, keys.job_prio, limit, position)
    if after is not None:
        return entries, after
    if len(entries) == limit:  # the groups begin on the next page
        return entries, GROUPED_BASE
    more, after = yield from groups_page(keys, limit - len(entries), GROUPED_BASE)
    return entries + more, after
