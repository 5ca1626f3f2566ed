"""Long-lived threads that run a worker's sync handlers.

Cheaper per task than ``loop.run_in_executor``: a job is one put on a C queue,
and results come back to the event loop in batches (one loop wake-up for every
handler that ended meanwhile, not one per handler). Threads start on demand, up
to ``size``; like `ThreadPoolExecutor`'s they are not daemons, so a handler that
never returns keeps the process alive until it does.
"""

from __future__ import annotations

import asyncio
import collections
import queue
import threading
from collections.abc import Callable
from typing import Any

_STOP = object()


class HandlerThreads:
    def __init__(self, loop: asyncio.AbstractEventLoop, size: int, name: str) -> None:
        self._loop = loop
        self._size = size
        self._name = name
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._busy = 0  # jobs submitted and not yet delivered (loop thread only)
        self._done: collections.deque[tuple[asyncio.Future[Any], bool, Any]] = collections.deque()
        self._scheduled = False
        self._closed = False

    def submit(self, function: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Run ``function(*args)`` on a handler thread; call from the loop's thread."""
        if self._closed:
            raise RuntimeError("handler threads are shut down")
        future = self._loop.create_future()
        self._busy += 1
        if self._busy > len(self._threads) and len(self._threads) < self._size:
            thread = threading.Thread(target=self._work, name=f"{self._name}_{len(self._threads)}")
            self._threads.append(thread)
            thread.start()
        self._jobs.put((future, function, args))
        return future

    def _work(self) -> None:
        jobs, done = self._jobs, self._done
        while True:
            job = jobs.get()
            if job is _STOP:
                return
            future, function, args = job
            try:
                result = (True, function(*args))
            except BaseException as error:
                result = (False, error)
            done.append((future, *result))
            del job, future, function, args, result  # drop references while idle
            if not self._scheduled:
                self._scheduled = True
                try:
                    self._loop.call_soon_threadsafe(self._deliver)
                except RuntimeError:  # the loop closed: nobody waits for results
                    return

    def _deliver(self) -> None:
        self._scheduled = False  # before draining: a result added later schedules again
        done = self._done
        while done:
            future, ok, value = done.popleft()
            self._busy -= 1
            if future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def shutdown(self) -> None:
        """Cancel jobs not started yet; threads exit once their handler returns."""
        self._closed = True
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not _STOP:
                job[0].cancel()
        for _ in self._threads:
            self._jobs.put(_STOP)
