"""Processes taken ahead, waiting to start: each queue's oldest first, and the
queues in turn, so one busy queue's take cannot hold back another's tasks for
longer than one of its own."""

from __future__ import annotations

from collections import deque

from .._process import Process


class Line:
    """Not thread-safe: its owner locks it (lanes) or owns its thread (the loop)."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[Process]] = {}  # non-empty ones, in turn order

    def __bool__(self) -> bool:
        return bool(self._queues)

    def append(self, process: Process) -> None:
        waiting = self._queues.get(process.queue)
        if waiting is None:
            waiting = self._queues[process.queue] = deque()
        waiting.append(process)

    def extend(self, processes: list[Process]) -> None:
        for process in processes:
            self.append(process)

    def pop(self) -> Process:
        """The oldest process of the queue whose turn it is; that queue's turn
        comes again after every other queue's. Raises IndexError when empty."""
        queue = next(iter(self._queues))  # dicts keep insertion order: the turn order
        waiting = self._queues.pop(queue)
        process = waiting.popleft()
        if waiting:
            self._queues[queue] = waiting  # to the back of the turn
        return process
