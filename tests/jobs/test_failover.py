"""Jobs survive their workers: real `worqr worker` processes are SIGKILLed or
paused mid-job. A job runs to one accepted finish on a peer, its attempts and
recoveries are recorded, a late finish of a paused worker is fenced, a job that
keeps killing its workers fails after max_recoveries, and retries=0 with
max_recoveries=0 gives at-most-once."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

import worqr
from tests.support.job_mesh import Mesh, mesh_fixture
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow


mesh = mesh_fixture("job_failover_app:worker")


def test_a_job_of_a_killed_worker_finishes_once_on_a_peer(mesh: Mesh, prefix: str) -> None:
    mesh.start()
    ref = mesh.client.submit("held", "work")
    wait_until(lambda: mesh.events("started", ref.id), message="the first start")
    [(victim, attempt)] = mesh.events("started", ref.id)
    assert attempt == 1
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: len(mesh.events("started", ref.id)) == 2, timeout=15, message="a peer")
    (peer, second) = mesh.events("started", ref.id)[1]
    assert peer != victim and second == 2
    mesh.redis.set(f"{prefix}:release", 1)
    assert mesh.client.result("held", ref.id, timeout=15) == f"by {peer}"
    info = mesh.client.get_job("held", ref.id)
    assert info is not None and (info.state, info.attempts, info.error) == ("finished", 2, None)
    stats = mesh.client.get_stats("held")
    assert (stats["finished"], stats["recovered"], stats.get("retried", 0)) == (1, 1, 0)
    assert mesh.client.count_jobs("held")["finished"] == 1


def test_a_paused_workers_late_finish_is_fenced(mesh: Mesh, prefix: str) -> None:
    mesh.start()
    ref = mesh.client.submit("held", "work")
    wait_until(lambda: mesh.events("started", ref.id), message="the first start")
    [(paused, _)] = mesh.events("started", ref.id)
    os.kill(paused, signal.SIGSTOP)
    try:
        wait_until(lambda: len(mesh.events("started", ref.id)) == 2, timeout=15, message="a peer")
        (peer, _) = mesh.events("started", ref.id)[1]
        mesh.redis.set(f"{prefix}:release", 1)
        assert mesh.client.result("held", ref.id, timeout=15) == f"by {peer}"
    finally:
        os.kill(paused, signal.SIGCONT)

    # The paused worker wakes: its handler returns (and its finish changes
    # nothing) or, had its worker seen its lease lost first, is cancelled.
    def ended_in(pid: int) -> int:
        ends = mesh.events("returned", ref.id) + mesh.events("cancelled", ref.id)
        return [who for who, _ in ends].count(pid)

    wait_until(
        lambda: ended_in(paused) == 1,
        timeout=15,
        message="the paused worker's handler ends",
    )
    assert mesh.client.result("held", ref.id, timeout=0) == f"by {peer}"
    assert mesh.client.get_stats("held")["finished"] == 1
    assert mesh.client.count_jobs("held")["finished"] == 1


def test_a_job_that_keeps_killing_its_workers_fails_after_max_recoveries(mesh: Mesh) -> None:
    mesh.client.configure_queue("poison", max_recoveries=1)
    mesh.start()
    ref = mesh.client.submit("poison", "pill")
    with pytest.raises(worqr.JobFailedError) as caught:
        mesh.client.result("poison", ref.id, timeout=40)
    assert caught.value.error == "WorkerLost: recovered 1 times"
    assert [attempt for _, attempt in mesh.events("started", ref.id)] == [1, 2]
    info = mesh.client.get_job("poison", ref.id)
    assert info is not None and info.attempts == 2


def test_retries_zero_and_max_recoveries_zero_is_at_most_once(mesh: Mesh) -> None:
    mesh.client.configure_queue("poison", max_recoveries=0)
    mesh.start()
    ref = mesh.client.submit("poison", "once", retries=0)
    with pytest.raises(worqr.JobFailedError, match="WorkerLost: recovered 0 times"):
        mesh.client.result("poison", ref.id, timeout=30)
    assert len(mesh.events("started", ref.id)) == 1  # it ran at most once


def test_a_sigkill_storm_finishes_every_job_once_with_its_result(mesh: Mesh) -> None:
    """2,000 jobs on 4 worker processes, a random registered child SIGKILLed every
    0.2-0.4 s (12 kills) while they run: every job finishes, with its own result,
    exactly once; the counts are exact; each job's attempts are its takes, and
    the takes that ended unfinished, as the counters report them (recovered,
    or handed back by a live worker), are the attempts beyond the first."""
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    mesh.client.configure_queue("storm", max_recoveries=-1)  # a storm is not a poison pill
    mesh.start(4, "--max-restarts", "1000")
    total = 2000
    refs = mesh.client.submit_many("storm", [f"{n}:{rng.randint(30, 90)}" for n in range(total)])
    killed: set[int] = set()
    began = time.monotonic()
    while len(killed) < 12 and time.monotonic() - began < 60:
        time.sleep(rng.uniform(0.2, 0.4))
        if mesh.client.count_jobs("storm")["finished"] == total:
            break
        # A killed worker keeps its lease for up to a TTL: it is no victim.
        victims = sorted(set(mesh.pids()) - killed)
        if len(victims) >= 2:  # leave a registered peer to fail the victim
            victim = rng.choice(victims)
            os.kill(victim, signal.SIGKILL)
            killed.add(victim)
    assert len(killed) >= 6, f"the storm was too short to mean anything ({seed=})"

    for number, ref in enumerate(refs):
        assert mesh.client.result("storm", ref.id, timeout=60) == str(number * number), seed
    counts = mesh.client.count_jobs("storm")
    assert counts == {**dict.fromkeys(counts, 0), "finished": total}, (counts, seed)
    stats = mesh.client.get_stats("storm")
    assert stats["finished"] == total and stats.get("retried", 0) == 0, (stats, seed)
    extra_attempts = 0
    for ref in refs:
        info = mesh.client.get_job("storm", ref.id)
        assert info is not None and info.state == "finished" and info.error is None
        starts = [attempt for _, attempt in mesh.events("started", ref.id)]
        # A start is recorded once the handler runs: a take killed before that
        # counts an attempt without a record, so the finishing take is the last.
        assert starts and max(starts) == info.attempts, (ref.id, starts, info.attempts, seed)
        extra_attempts += info.attempts - 1
    # Each take beyond a job's first is one that ended unfinished: a recovery
    # from a dead worker, or (on a loaded machine) a live worker handing a job
    # back: stopped when its lease went stale (no heartbeat landed in time).
    handed_back = stats.get("stopped", 0)
    assert stats.get("recovered", 0) + handed_back == extra_attempts, (stats, extra_attempts, seed)
    assert stats.get("recovered", 0) > 0, "no job was ever recovered: the kills missed every job"
