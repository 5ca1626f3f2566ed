"""Dead-letter redrive and purge, and the read methods `worqr status` uses."""

from __future__ import annotations

import asyncio

import redis

import worqr
from tests.support.waiting import wait_until


def _dead_letter(wq: worqr.Worqr, queue: str, tasks: list[str]) -> None:
    wq.enqueue_many(queue, tasks)
    for process in wq.dequeue_many(queue, len(tasks)):
        assert wq.fail_process(process)


def test_requeue_failed_moves_every_letter_to_the_back_oldest_first(
    redis_url: str, prefix: str
) -> None:
    settings = worqr.Settings(prefix=prefix, requeue_chunk=2)  # forces several chunks
    with worqr.Worqr(redis_url, settings=settings) as wq:
        wq.start_worker()
        _dead_letter(wq, "q", ["a", "b", "c", "d", "e"])
        wq.enqueue("q", "fresh")
        assert wq.get_failed("q") == ["e", "d", "c", "b", "a"]
        assert wq.count_failed("q") == 5

        assert wq.requeue_failed("q") == 5

        assert wq.get_failed("q") == []
        order = [p.task for p in wq.dequeue_many("q", 10)]
        assert order == ["fresh", "a", "b", "c", "d", "e"]
        assert wq.get_stats("q")["redriven"] == 5
        assert wq.requeue_failed("q") == 0


def test_requeue_failed_wakes_an_idle_worker(redis_url: str, prefix: str) -> None:
    with (
        worqr.Worqr(redis_url, prefix=prefix) as consumer,
        worqr.Worqr(redis_url, prefix=prefix) as admin,
    ):
        consumer.start_worker()
        _dead_letter(consumer, "q", ["x"])
        assert consumer.dequeue("q") is None  # empty: the consumer is idle now
        events: list[tuple[str, object]] = []
        consumer.on("q", lambda event, message: events.append((event, message)))
        admin.requeue_failed("q")
        wait_until(lambda: ("work", 1) in events, message="no wake-up after the redrive")


def test_purge_failed_drops_letters_and_counts_them(redis_url: str, prefix: str) -> None:
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        wq.start_worker()
        _dead_letter(wq, "q", ["a", "b"])
        assert wq.purge_failed("q") == 2
        assert wq.get_failed("q") == []
        assert wq.purge_failed("q") == 0
        assert wq.count_tasks("q") == 0


def test_status_reads(redis_url: str, prefix: str, redis_client: redis.Redis) -> None:
    with (
        worqr.Worqr(redis_url, prefix=prefix) as wq,
        worqr.Worqr(redis_url, prefix=prefix) as other,
    ):
        me = wq.start_worker()
        them = other.start_worker()
        wq.enqueue_many("q", ["1", "2", "3"])
        wq.dequeue_many("q", 2)
        assert wq.count_worker_processes("q", me) == 2
        assert wq.count_worker_processes("q", them) == 0
        redis_client.delete(f"{{{prefix}}}:alive:{them}")
        assert wq.workers_alive([me, them, "nobody"]) == [True, False, False]
        stats = wq.get_stats("q")
        assert stats["enqueued"] == 3 and stats["dequeued"] == 2


def test_async_client_has_the_same_methods(redis_url: str, prefix: str) -> None:
    async def scenario() -> None:
        async with worqr.AsyncWorqr(redis_url, prefix=prefix) as wq:
            me = await wq.start_worker()
            await wq.enqueue_many("q", ["a", "b"])
            for process in await wq.dequeue_many("q", 2):
                await wq.fail_process(process)
            assert await wq.count_failed("q") == 2
            assert await wq.requeue_failed("q") == 2
            assert await wq.count_tasks("q") == 2
            assert await wq.workers_alive([me]) == [True]
            assert await wq.count_worker_processes("q", me) == 0
            assert (await wq.get_stats("q"))["redriven"] == 2
            for process in await wq.dequeue_many("q", 2):
                await wq.fail_process(process)
            assert await wq.purge_failed("q") == 2

    asyncio.run(scenario())
