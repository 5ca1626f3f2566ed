"""Sending the lines job handlers log (``current_job().log``) in the background.

A handler's call only keeps the line (under a lock: handlers run in threads
too); the loop sends each job's waiting lines, in the order they were logged,
in one call, and the lines logged meanwhile in the next, so a job that logs in
a loop costs a call per round trip, not per line. `sent` lets the outcome wait
for the last lines, as it waits for the last progress value.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from .._clients.async_client import AsyncWorqr
from .._jobs import JobProcess

logger = logging.getLogger("worqr.worker")


class JobLogSender:
    def __init__(self, client: AsyncWorqr, track: Callable[[asyncio.Future[Any]], None]) -> None:
        self.client = client
        self._track = track
        self._lock = threading.Lock()
        self._waiting: dict[str, list[bytes]] = {}  # pid -> lines not yet sent
        self._sending: dict[str, asyncio.Task[None]] = {}  # pid -> its writer

    def write(self, loop: asyncio.AbstractEventLoop, process: JobProcess, line: bytes) -> None:
        """From the handler (any thread): keep the line; the loop sends it."""
        with self._lock:
            lines = self._waiting.setdefault(process.id, [])
            lines.append(line)
            first = len(lines) == 1
        if first:  # later lines ride with it: one wake-up of the loop per batch
            loop.call_soon_threadsafe(self._arrived, process)

    def _arrived(self, process: JobProcess) -> None:
        if process.id not in self._sending:
            task = asyncio.create_task(self._send(process))
            self._sending[process.id] = task
            self._track(task)

    def _take(self, pid: str) -> list[bytes]:
        with self._lock:
            return self._waiting.pop(pid, [])

    async def _send(self, process: JobProcess) -> None:
        try:
            while lines := self._take(process.id):
                try:
                    await self.client.internals.append_job_log(process, lines)
                except Exception as error:  # a lost line is only a line
                    logger.debug("log lines of job %s not stored: %s", process.job_id, error)
        finally:
            self._sending.pop(process.id, None)

    async def sent(self, process: JobProcess) -> None:
        """Wait until the job's last lines are written (before its outcome)."""
        task = self._sending.get(process.id)
        if task is not None:
            await asyncio.wait({task})

    def sending(self, process: JobProcess) -> bool:
        return process.id in self._sending
