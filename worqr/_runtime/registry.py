"""Which handler runs each queue: `Worker.handler` (task queues) and
`Worker.job` (job queues), kept apart from running them."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from .._checks import flag
from .._core.jobs_submit import job_options
from .._core.schedules import checked_schedule
from .._errors import WorqrError
from .._jobs import Backoff, check_backoff
from .._keys import validate_name
from .._schedules import ScheduleArgs
from .isolation.targets import target_of
from .running import Handler, HandlerSpec, is_async_handler

H = TypeVar("H", bound=Handler)


class HandlerRegistry:
    """The handlers of a `Worker`, by queue; registered before it runs."""

    _loop: asyncio.AbstractEventLoop | None

    def __init__(self) -> None:
        self._specs: dict[str, HandlerSpec] = {}
        self._crons: dict[tuple[str, str], ScheduleArgs] = {}

    def handler(
        self, queue: str, *, persistent: bool = False, isolated: bool = False
    ) -> Callable[[H], H]:
        """Register the function that runs the tasks of ``queue``: sync (run in the
        thread pool) or async. It takes the task (str, or bytes if not UTF-8).
        ``isolated``: a sync handler runs in a child process (docs/isolation.md)."""
        self._check_new(queue, isolated)
        return self._registering(
            queue,
            isolated,
            lambda function: HandlerSpec(queue, function, persistent, is_async_handler(function)),
        )

    def job(
        self,
        queue: str,
        *,
        retries: int | None = None,
        backoff: Backoff | float | None = None,
        timeout: float | None = None,
        isolated: bool = False,
    ) -> Callable[[H], H]:
        """Register the function that runs the jobs of ``queue`` (a job queue):
        sync (run on a handler thread) or async. It takes the payload (str, or
        bytes if not UTF-8) and returns the job's result (str, bytes or None).
        ``retries``, ``backoff``, ``timeout``: this handler's defaults (a job's
        own options win; else `JobSettings`). ``isolated``: a sync handler runs
        in a child process, stopped for good past its timeout (docs/isolation.md)."""
        self._check_new(queue, isolated)
        options = job_options(retries=retries, backoff=backoff, timeout=timeout)
        return self._registering(
            queue,
            isolated,
            lambda function: HandlerSpec(
                queue,
                function,
                persistent=False,
                is_async=is_async_handler(function),
                jobs=True,
                retries=options.get("R"),
                backoff=None if backoff is None else check_backoff(backoff),
                timeout=None if timeout is None else float(timeout),
            ),
        )

    def _check_new(self, queue: str, isolated: bool) -> None:
        """What `handler` and `job` check before anything else: a queue with no handler yet."""
        flag("isolated", isolated)
        validate_name(queue)
        if queue in self._specs:
            raise ValueError(f"queue {queue!r} already has a handler")

    def _registering(
        self, queue: str, isolated: bool, spec_of: Callable[[Handler], HandlerSpec]
    ) -> Callable[[H], H]:
        """The decorator of `handler` and `job`: registers the function under
        ``queue`` as ``spec_of`` describes it (in a child process if ``isolated``)."""

        def register(function: H) -> H:
            if not callable(function):
                raise TypeError("a handler must be callable")
            if self._loop is not None:
                raise WorqrError("register handlers before the worker runs")
            spec = spec_of(function)
            self._specs[queue] = isolate(spec) if isolated else spec
            return function

        return register

    def cron(
        self,
        queue: str,
        name: str,
        *,
        cron: str | None = None,
        every: float | None = None,
        tz: str = "UTC",
        payload: str | bytes = "",
        overlap: bool = True,
        **options: Any,
    ) -> None:
        """Declare a schedule of ``queue`` (see `Worqr.schedule`), registered
        when the worker starts: an idempotent upsert, so every worker of the
        mesh may declare it and it still fires once per fire time. ``options``:
        its jobs' options, as `Worqr.schedule` takes them. Checked now:
        bad arguments raise `ValueError` or `TypeError` here."""
        validate_name(queue)
        if self._loop is not None:
            raise WorqrError("declare schedules before the worker runs")
        if (queue, name) in self._crons:
            raise ValueError(f"schedule {name!r} of queue {queue!r} is declared already")
        args = ScheduleArgs(cron, every, tz, payload, overlap, options)
        checked_schedule(name, args, lambda data: data.encode() if isinstance(data, str) else data)
        self._crons[(queue, name)] = args

    @property
    def queues(self) -> list[str]:
        return sorted(self._specs)

    @property
    def handlers(self) -> dict[str, Handler]:
        return {queue: spec.function for queue, spec in self._specs.items()}

    @property
    def persistent_queues(self) -> list[str]:
        return sorted(queue for queue, spec in self._specs.items() if spec.persistent)


def isolate(spec: HandlerSpec) -> HandlerSpec:
    """``spec`` run in a child process. It stays a sync handler: a thread (a
    lane or a handler thread) waits for its child, and a stop halts the child.
    An async handler cannot be isolated: it never blocks a thread, and a child
    could not share its loop."""
    if spec.is_async:
        raise ValueError(
            f"the handler of queue {spec.queue!r} is async: only sync handlers can be isolated"
        )
    target_of(spec.function, spec.queue)  # a child must be able to import it
    return dataclasses.replace(spec, isolated=True)
