"""Every Lua script's header is its contract, and its builder keeps it.

A builder in `worqr._core.scripts` (the core's), `worqr._core.job_scripts` (the
job layer's), `worqr._core.flow_scripts` (flows'), `worqr._core.bulk_scripts`
(the bulk operations') or `worqr._core.job_logs_scripts` (job logs') is called
with a recognisable value for each parameter; the KEYS and ARGV of the `Call`
it returns must be exactly the slots the script's header lists, in order. A
slot named after a key role is that key (``owned`` is ``keys.owned(worker)``,
``job_log`` is ``keys.job_log(id)``); a slot named like a parameter is that
parameter's value; ``wake_prefix`` and ``events`` come from the queue's keys. A
block of keys many scripts take in the same order is one header line,
``-- KEYS[i..j] <block> ... (lib/<piece>)``, that stands for the block's keys as
the piece lists them (``job_keys``, ``flow_keys``, ``sched_keys``: the `QueueKeys`
properties of those names), so every script's full KEYS list is checked all the
same. The scripts' bodies bind each slot to a local of the same name (a block:
the piece's binding function, called with the block's first index, names each
of its keys), and headers say what they publish.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from worqr._core import (
    bulk_scripts,
    flow_scripts,
    history_scripts,
    job_logs_scripts,
    job_scripts,
    scripts,
)
from worqr._core.calls import Call
from worqr._core.lua import (
    include_order,
    includes,
    lib_pieces,
    raw_lib,
    raw_source,
    script_names,
)
from worqr._keys import MeshKeys, QueueKeys

SLOT = re.compile(
    r"^-- (KEYS|ARGV)\[(\d+)(?:\.\.(n|\d+))?\]\s+(\w+)(?:.*\(lib/(\w+)\))?", re.MULTILINE
)
MEMBER = re.compile(r"^--\s+\+(\d+)\s+(\w+)\s", re.MULTILINE)  # a block's keys, in its piece
QUEUE = QueueKeys("{t:q}")
MESH = MeshKeys("t")


@dataclass(frozen=True)
class Slot:
    index: int
    name: str
    variadic: bool
    last: int  # the last index: a block's spans several
    piece: str | None = None  # the piece that lists a block's keys

    @property
    def block(self) -> bool:
        return self.piece is not None and self.last > self.index


def header(name: str) -> tuple[list[Slot], list[Slot], str]:
    """The KEYS and ARGV slots of a script's header, and the header text."""
    text = raw_source(name)
    head = text.split("\nlocal ", 1)[0].split("\n--!include", 1)[0]
    keys: list[Slot] = []
    argv: list[Slot] = []
    for kind, index, upto, slot, piece in SLOT.findall(head):
        first = int(index)
        last = int(upto) if upto.isdigit() else first
        found = Slot(first, slot, upto == "n", last, piece if upto.isdigit() else None)
        (keys if kind == "KEYS" else argv).append(found)
    return keys, argv, head


def block_members(slot: Slot) -> list[str]:
    """The key roles a block stands for, in order, as its piece lists them."""
    assert slot.piece, slot
    members = MEMBER.findall(raw_lib(slot.piece))
    assert [int(offset) for offset, _ in members] == list(range(len(members))), slot.piece
    return [role for _, role in members]


MODULES = (scripts, job_scripts, flow_scripts, bulk_scripts, job_logs_scripts, history_scripts)


def defined_builders() -> list[str]:
    """The public functions the builder modules define."""
    return sorted(
        name
        for module in MODULES
        for name, value in vars(module).items()
        if inspect.isfunction(value)
        and not name.startswith("_")
        and value.__module__ == module.__name__
    )


def builder(name: str) -> Callable[..., Call]:
    (module,) = [module for module in MODULES if hasattr(module, name)]
    found: Callable[..., Call] = getattr(module, name)
    return found


def sample(name: str, kind: Any) -> Any:
    """A value for a builder parameter that shows where it ends up."""
    origin = typing.get_origin(kind)
    if kind is QueueKeys:
        return QUEUE
    if kind is MeshKeys:
        return MESH
    if kind is bool:
        return True
    if kind is int:
        return 1000 + sum(map(ord, name))
    if origin is typing.Literal:
        return typing.get_args(kind)[0]
    if origin in (Sequence, list, tuple) or kind is Sequence:
        (item,) = typing.get_args(kind) or (str,)
        if typing.get_origin(item) is tuple:  # groups of fields (a job, a finish)
            width = len(typing.get_args(item))
            return [tuple(f"<{name}-{i}.{j}>" for j in range(width)) for i in (1, 2)]
        return [f"<{name}-1>", f"<{name}-2>"]
    return f"<{name}>"


def run(builder: Callable[..., Call]) -> tuple[Call, dict[str, Any]]:
    hints = typing.get_type_hints(builder)
    arguments = {name: sample(name, hints[name]) for name in inspect.signature(builder).parameters}
    return builder(**arguments), arguments


def expected_key(slot: Slot, arguments: dict[str, Any]) -> list[str]:
    keys = QUEUE if any(v is QUEUE for v in arguments.values()) else MESH
    role = getattr(keys, slot.name, None)
    assert role is not None, f"KEYS slot {slot.name!r} is no key role of {type(keys).__name__}"
    if slot.block:  # the piece's list, which is also the QueueKeys property's
        members = [getattr(keys, member) for member in block_members(slot)]
        assert members == list(role), f"lib/{slot.piece} lists {slot.name} otherwise"
        assert len(members) == slot.last - slot.index + 1, f"KEYS[{slot.index}..{slot.last}]"
        return members
    if not callable(role):
        return [role]
    if slot.variadic:  # one key per item of the builder's sequence of names
        (workers,) = [
            v for v in arguments.values() if isinstance(v, list) and isinstance(v[0], str)
        ]
        return [role(worker) for worker in workers]
    return [role(arguments["worker"] if "worker" in arguments else arguments["id"])]


def expected_arg(slot: Slot, arguments: dict[str, Any]) -> list[Any]:
    if slot.name in arguments:
        value = arguments[slot.name]
        if slot.variadic:  # groups of fields are flattened, in order
            return [f for item in value for f in (item if isinstance(item, tuple) else (item,))]
        return ["1" if value is True else value]
    keys = next(v for v in arguments.values() if isinstance(v, QueueKeys | MeshKeys))
    derived = getattr(keys, slot.name, None)
    assert isinstance(derived, str), f"ARGV slot {slot.name!r} is no parameter and no key value"
    return [derived]


def test_every_script_has_a_builder_and_every_builder_a_script() -> None:
    assert defined_builders() == script_names()


@pytest.mark.parametrize("name", script_names())
def test_the_builder_passes_exactly_the_slots_of_the_header(name: str) -> None:
    keys, argv, _ = header(name)
    assert keys, f"{name}.lua lists no KEYS"
    call, arguments = run(builder(name))
    assert call.script == name
    for what, slots in (("KEYS", keys), ("ARGV", argv)):
        starts = [1, *(slot.last + 1 for slot in slots)][: len(slots)]
        assert [slot.index for slot in slots] == starts, (name, what)
        assert all(not slot.variadic for slot in slots[:-1]), f"{name}: only the last {what} varies"
    wanted_keys = [key for slot in keys for key in expected_key(slot, arguments)]
    wanted_args = [arg for slot in argv for arg in expected_arg(slot, arguments)]
    assert list(call.keys) == wanted_keys, f"{name}.lua KEYS"
    assert list(call.args) == wanted_args, f"{name}.lua ARGV"


@pytest.mark.parametrize("name", script_names())
def test_the_body_binds_each_slot_to_a_named_local(name: str) -> None:
    """A block of keys is bound by its piece's function, called with its first index."""
    keys, argv, _ = header(name)
    body = raw_source(name)
    for kind, slots in (("KEYS", keys), ("ARGV", argv)):
        for slot in slots:
            if slot.variadic:
                continue  # read in a loop from its first index
            if slot.block:
                assert slot.piece in include_order(includes(body), raw_lib, name), name
                if slot.name == "job_keys":  # always first: it makes J
                    binding = r"^local J = job_keys\(\)$"
                    assert slot.index == 1, f"{name}.lua: the job keys come first"
                else:
                    binding = rf"^{slot.name}\(J, {slot.index}\)$"
            else:
                binding = rf"^local {slot.name} = .*\b{kind}\[{slot.index}\]"
            assert re.search(binding, body, re.MULTILINE), f"{name}.lua: {kind}[{slot.index}]"


def blocks() -> list[Slot]:
    """Each block of keys some header names (once, by its first use)."""
    found: dict[str, Slot] = {}
    for name in script_names():
        for slot in header(name)[0]:
            if slot.block:
                found.setdefault(slot.name, slot)
    return list(found.values())


@pytest.mark.parametrize("block", blocks(), ids=lambda slot: slot.name)
def test_a_block_is_bound_key_by_key_by_its_piece(block: Slot) -> None:
    """The block's function gives each key the field of J named like its role
    without 'job_' (lib/job_keys: J.prio is job_prio)."""
    assert block.piece
    text = raw_lib(block.piece)
    function = re.search(rf"^local function {block.name}\(.*?^end$", text, re.M | re.S)
    assert function, f"lib/{block.piece} defines no {block.name}()"
    for offset, role in enumerate(block_members(block)):
        field = role.removeprefix("job_")
        where = (
            str(1 + offset)  # the job keys: always KEYS[1..15]
            if block.name == "job_keys"
            else "first" + (f" \\+ {offset}" if offset else "")
        )
        binding = rf"\b{field} = KEYS\[{where}\]"
        assert re.search(binding, function.group(0)), f"lib/{block.piece}: {role}"


@pytest.mark.parametrize("name", script_names())
def test_the_header_says_what_the_script_publishes(name: str) -> None:
    _, _, head = header(name)
    events = re.search(r"^-- Events: (.+)$", head, re.MULTILINE)
    assert events, f"{name}.lua has no Events: line"
    _, argv, _ = header(name)
    publishes = any(slot.name == "publish" for slot in argv)
    assert (events.group(1) != "none.") == publishes, name
    for line in ("-- Reply:", "-- Errors:"):
        assert line in head, f"{name}.lua has no {line!r} line"


def test_shared_pieces_are_included_not_copied() -> None:
    """The repeated pieces (publish with its fallback, waking idle workers,
    ending a process, taking from the front) exist once, in ``lua/lib``, and
    every piece there is used."""
    shared = {
        function
        for piece in lib_pieces()
        for function in re.findall(r"^local function (\w+)", raw_lib(piece), re.MULTILINE)
    }
    used: set[str] = set()
    for name in script_names():
        text = raw_source(name)
        used.update(include_order(includes(text), raw_lib, name))
        assert "REDIS_VERSION_NUM" not in text, f"{name}.lua: include publish"
        assert "'SPOP', idle" not in text, f"{name}.lua: include wake"
        assert "'RPOP', tasks" not in text, f"{name}.lua: include take"
        assert "'TIME'" not in text, f"{name}.lua: include clock"
        for function in re.findall(r"^local function (\w+)", text, re.MULTILINE):
            assert function not in shared, f"{name}.lua defines {function} again: include it"
    assert used == set(lib_pieces())


def test_a_drifted_builder_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself fails when a builder and its header disagree: here the
    reconcile slip, a stop without its publish argument."""

    def drifted(keys: QueueKeys, worker: str, pid: str, *, publish: str) -> Call:
        return Call(
            "stop",
            (keys.tasks, keys.processes, keys.owned(worker), keys.idle, keys.stats),
            (pid, keys.wake_prefix),
        )

    monkeypatch.setattr(scripts, "stop", drifted)
    with pytest.raises(AssertionError, match=r"stop\.lua ARGV"):
        test_the_builder_passes_exactly_the_slots_of_the_header("stop")
