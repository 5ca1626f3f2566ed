"""Observability hooks of the worker runtime.

The runtime calls these; metrics (`worqr.metrics`) implement them. The runtime
never imports prometheus_client. Every started process ends in exactly one of
finished, failed, retried, cancelled or fenced.
"""

from __future__ import annotations


class WorkerHooks:
    """No-op base: subclass and override what you need."""

    def on_started(self, queue: str) -> None: ...

    def on_finished(self, queue: str, seconds: float) -> None: ...

    def on_failed(self, queue: str, seconds: float) -> None: ...

    def on_retried(self, queue: str) -> None:
        """The task went back to the front (worqr.Retry, or a shutdown stopped its handler)."""

    def on_cancelled(self, queue: str) -> None: ...

    def on_fenced(self, queue: str) -> None:
        """The process was no longer ours: the worker lost its lease (a peer owns
        the task now), or Redis refused the acknowledgement for that reason."""

    def on_dropped(self, queue: str) -> None:
        """A process came back from a dequeue under a worker id whose lease was
        already lost (the dequeue ran late, e.g. after Redis stalled): it is not
        started, and the peers return its task to the front."""

    def on_lease_lost(self) -> None: ...

    def on_dequeue(self, queue: str, asked: int, got: int) -> None: ...

    def on_wakeup(self, queue: str) -> None: ...
