"""The dedup modes on a real 3-master Redis Cluster: each marker lives in its
queue's slot, declared to the scripts (a cross-slot call fails with CROSSSLOT),
on queues spread over the masters; test_dedup's tests run here unchanged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import worqr

from .test_cluster import make, redis_client, redis_cluster, redis_cluster_url
from .test_dedup import (
    keep_last,
    test_a_cancelled_follow_up_makes_room_for_a_new_one,
    test_bad_dedup_input_writes_nothing,
    test_debounce_releases_its_key_on_every_terminal_path,
    test_debounce_replaces_a_waiting_jobs_payload_options_and_due_time,
    test_keep_last_places_its_follow_up_when_the_run_ends_any_way,
    test_keep_last_waits_as_debounce_then_keeps_one_follow_up_while_it_runs,
    test_throttle_answers_the_first_job_whatever_its_state_until_its_ttl,
    test_throttle_markers_are_forgotten_once_expired,
)
from .test_lifecycle import finish, take

pytestmark = pytest.mark.cluster

__all__ = [  # borrowed, collected here with the cluster's fixtures
    "make",
    "redis_client",
    "redis_cluster",
    "redis_cluster_url",
    "test_a_cancelled_follow_up_makes_room_for_a_new_one",
    "test_bad_dedup_input_writes_nothing",
    "test_debounce_releases_its_key_on_every_terminal_path",
    "test_debounce_replaces_a_waiting_jobs_payload_options_and_due_time",
    "test_keep_last_places_its_follow_up_when_the_run_ends_any_way",
    "test_keep_last_waits_as_debounce_then_keeps_one_follow_up_while_it_runs",
    "test_throttle_answers_the_first_job_whatever_its_state_until_its_ttl",
    "test_throttle_markers_are_forgotten_once_expired",
]


def test_each_mode_on_queues_of_every_master(make: Callable[..., worqr.Worqr]) -> None:
    producer, worker = make(), make(start=True)
    for queue in (f"dedup-{i}" for i in range(6)):  # slots on every master
        throttled = producer.submit(queue, "t", dedup=worqr.Dedup("k", ttl=60))
        assert producer.submit(queue, "t2", dedup=worqr.Dedup("k", ttl=60)).id == throttled.id
        waiting = producer.submit(queue, "b", delay=60, dedup=worqr.Dedup("k", mode="debounce"))
        again = producer.submit(queue, "b2", delay=60, dedup=worqr.Dedup("k", mode="debounce"))
        assert again == worqr.JobRef(queue, waiting.id, duplicate=True)
        held = producer.submit(queue, "l", dedup=keep_last())
        running = {p.job_id: p for p in take(worker, queue)}
        follow = producer.submit(queue, "l2", dedup=keep_last())
        assert producer.get_job(queue, follow.id).state == "waiting"  # type: ignore[union-attr]
        assert finish(worker, running[held.id])
        assert producer.get_job(queue, follow.id).state == "queued"  # type: ignore[union-attr]
        producer.delete_queue(queue)  # its throttle markers go with it
