"""What flows hand out and take in, without I/O: `Step` (a chain's step),
`FlowJob` (a node of a parent/children tree), `FlowRef`, `FlowInfo`,
`ChildOutcome`; checking them, and the specs the scripts carry for them.

Ids are reserved shapes: a chain ``C`` has steps ``C.0``, ``C.1``, ...; a flow's
root ``R`` has children ``R.0``, ``R.1``, ..., and theirs ``R.0.0``, ...
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._jobs import TERMINAL, JobInfo, JobState
from ._keys import validate_name

ChildPolicy = Literal["fail", "ignore", "continue"]
FlowState = Literal["running", "finished", "failed", "cancelled"]
POLICIES: tuple[str, ...] = ("fail", "ignore", "continue")
MAX_STEPS = 1000
MAX_FLOW_JOBS = 10_000
REFUSED_OPTIONS = frozenset({"unique", "id"})


def _payload(payload: object, what: str) -> str | bytes | None:
    if payload is None or isinstance(payload, str | bytes):
        return payload
    if isinstance(payload, bytearray | memoryview):
        return bytes(payload)
    raise TypeError(f"{what} payload must be str, bytes or None, not {type(payload).__name__}")


def _options(options: dict[str, Any], what: str) -> dict[str, Any]:
    refused = sorted(REFUSED_OPTIONS & options.keys())
    if refused:
        raise TypeError(f"{what} takes no {', '.join(refused)} (flow jobs get their own ids)")
    return dict(options)


class Step:
    """One step of a chain (`submit_chain`): a job on ``queue``. A step without a
    payload receives the previous step's result (the first one: an empty
    payload). ``job_options`` are `submit`'s (``priority``, ``retries``,
    ``backoff``, ``timeout``, ``result_ttl``, ``delay``, ``at``)."""

    __slots__ = ("options", "payload", "queue")

    def __init__(self, queue: str, payload: str | bytes | None = None, **job_options: Any) -> None:
        self.queue = validate_name(queue)
        self.payload = _payload(payload, "a step's")
        self.options = _options(job_options, "Step")

    def __repr__(self) -> str:
        return f"Step({self.queue!r})"


class FlowJob:
    """A job of a flow (`submit_flow`) on ``queue``, with ``children`` that run
    first. The job runs once every child ended; ``on_child_failure`` decides
    what a child that failed or was cancelled does: ``"fail"`` fails this job at
    once (and cancels its other children), ``"ignore"`` runs it with the
    finished children's results, ``"continue"`` with every child's outcome.
    ``job_options`` are `submit`'s, as for `Step`."""

    __slots__ = ("children", "on_child_failure", "options", "payload", "queue")

    def __init__(
        self,
        queue: str,
        payload: str | bytes | None = None,
        *,
        children: Iterable[FlowJob] = (),
        on_child_failure: ChildPolicy = "fail",
        **job_options: Any,
    ) -> None:
        self.queue = validate_name(queue)
        self.payload = _payload(payload, "a flow job's")
        if isinstance(children, FlowJob | str | bytes):
            raise TypeError("children must be an iterable of FlowJob")
        self.children = tuple(children)
        for child in self.children:
            if not isinstance(child, FlowJob):
                raise TypeError(f"children must be FlowJob, not {type(child).__name__}")
        if on_child_failure not in POLICIES:
            raise ValueError(f"on_child_failure must be one of {', '.join(POLICIES)}")
        self.on_child_failure = on_child_failure
        self.options = _options(job_options, "FlowJob")

    def __repr__(self) -> str:
        return f"FlowJob({self.queue!r}, children={len(self.children)})"


@dataclass(frozen=True, slots=True)
class FlowRef:
    """What `submit_chain` and `submit_flow` return: the flow's id, its kind
    ("chain" or "tree"), and every job it will have, as (queue, id), the root
    (or first step) first."""

    id: str
    kind: str
    jobs: tuple[tuple[str, str], ...] = field(repr=False)

    @property
    def root(self) -> tuple[str, str]:
        """(queue, id) of the first step, or of the parent at the top."""
        return self.jobs[0]

    @property
    def last(self) -> tuple[str, str]:
        """(queue, id) of the job whose result is the flow's: a chain's last
        step, a tree's root."""
        return self.jobs[-1] if self.kind == "chain" else self.jobs[0]


@dataclass(frozen=True, slots=True)
class FlowInfo:
    """A flow as `get_flow` reads it: its state ("running", "finished", "failed",
    "cancelled") and the jobs that exist (a chain's later steps exist once the
    step before finished; purged jobs are left out)."""

    id: str
    kind: str
    state: FlowState
    jobs: list[JobInfo] = field(repr=False)


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """How one child of a flow parent ended (`current_job().child_outcomes()`)."""

    index: int
    id: str
    queue: str
    state: JobState
    result: str | bytes | None
    error: str | None


_ENDED: dict[str, FlowState] = {
    "finished": "finished",
    "failed": "failed",
    "cancelled": "cancelled",
}


def flow_state(
    kind: str, root_id: str, jobs: Sequence[JobInfo], planned: int, cancelled: bool
) -> FlowState:
    """A chain is failed or cancelled when a step is, finished when its last step
    is; a tree is as its root ended. Else, or while parts of it are unknown,
    "running" (a flow marked cancelled whose jobs all ended: "cancelled")."""
    states = [job.state for job in jobs]
    if kind == "chain":
        if "failed" in states:
            return "failed"
        if "cancelled" in states:
            return "cancelled"
        if len(jobs) == planned and states and states[-1] == "finished":
            return "finished"
    elif jobs and jobs[0].id == root_id and states[0] in TERMINAL:
        return _ENDED[states[0]]
    if cancelled and all(state in TERMINAL for state in states):
        return "cancelled"
    return "running"


# -- the specs the scripts carry ------------------------------------------------

Encode = Callable[[object], bytes]
# The first job's payload, options and flow spec, and every job's (queue, id).
FlowSpecs = tuple[bytes, dict[str, Any], dict[str, Any], list[tuple[str, str]]]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text)


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def chain_specs(
    flow_id: str, steps: Sequence[Step], encode: Encode, options: Callable[..., dict[str, Any]]
) -> FlowSpecs:
    """The first step's payload, options and flow spec (its next steps, each with
    its id, queue, options and own payload if any), and every step's (queue, id)."""
    if isinstance(steps, str | bytes) or not isinstance(steps, Sequence):
        raise TypeError("submit_chain takes a list of Step")
    if not steps:
        raise ValueError("a chain needs at least one step")
    if len(steps) > MAX_STEPS:
        raise ValueError(f"a chain has at most {MAX_STEPS} steps, got {len(steps)}")
    for step in steps:
        if not isinstance(step, Step):
            raise TypeError(f"submit_chain takes Step items, not {type(step).__name__}")
    ids = [f"{flow_id}.{k}" for k in range(len(steps))]
    nexts = []
    for k, step in enumerate(steps[1:], start=1):
        spec: dict[str, Any] = {"q": step.queue, "i": ids[k], "o": options(**step.options)}
        if step.payload is not None:
            spec["p"] = _b64(encode(step.payload))
        nexts.append(spec)
    first = steps[0]
    flow: dict[str, Any] = {"g": flow_id}
    if nexts:
        flow["nx"] = nexts
    payload = encode(first.payload if first.payload is not None else b"")
    jobs = [(step.queue, ids[k]) for k, step in enumerate(steps)]
    return payload, options(**first.options), flow, jobs


def tree_specs(
    flow_id: str, root: FlowJob, encode: Encode, options: Callable[..., dict[str, Any]]
) -> FlowSpecs:
    """The root's payload, options and flow spec (its children's specs, nested),
    and every job's (queue, id), root first, depth first."""
    if not isinstance(root, FlowJob):
        raise TypeError(f"submit_flow takes a FlowJob, not {type(root).__name__}")
    jobs: list[tuple[str, str]] = []
    path: set[int] = set()

    def visit(job: FlowJob, job_id: str) -> dict[str, Any]:
        if id(job) in path:
            raise ValueError(f"flow job {job_id} is its own ancestor: a cycle")
        jobs.append((job.queue, job_id))
        if len(jobs) > MAX_FLOW_JOBS:
            raise ValueError(f"a flow has at most {MAX_FLOW_JOBS} jobs")
        path.add(id(job))
        spec: dict[str, Any] = {"q": job.queue, "i": job_id, "o": options(**job.options)}
        if job.payload is not None:
            spec["p"] = _b64(encode(job.payload))
        if job.children:
            spec["f"] = job.on_child_failure
            spec["c"] = [visit(child, f"{job_id}.{i}") for i, child in enumerate(job.children)]
        path.discard(id(job))
        return spec

    spec = visit(root, flow_id)
    payload = unb64(spec["p"]) if "p" in spec else b""
    flow: dict[str, Any] = {"g": flow_id}
    if "c" in spec:
        flow["f"], flow["c"] = spec["f"], spec["c"]
    return payload, spec["o"], flow, jobs


_OUTCOMES: dict[str, JobState] = {"f": "finished", "x": "failed", "c": "cancelled"}


def child_outcome(parent_id: str, index: int, queue: str, raw: bytes | None) -> ChildOutcome:
    """A child's outcome as `job_child_done` stored it: a JSON header, a newline,
    then its result (finished) or error text."""
    child_id = f"{parent_id}.{index}"
    if raw is None:
        return ChildOutcome(index, child_id, queue, "cancelled", None, "no report")
    head, _, body = raw.partition(b"\n")
    header = json.loads(head)
    state = _OUTCOMES[header["s"]]
    if state != "finished":
        return ChildOutcome(index, child_id, queue, state, None, body.decode("utf-8", "replace"))
    kind = header.get("y")
    result: str | bytes | None = None
    if kind == "s":
        result = body.decode("utf-8", "surrogateescape")
    elif kind == "b":
        result = bytes(body)
    return ChildOutcome(index, child_id, queue, state, result, None)
