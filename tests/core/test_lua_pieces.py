"""The Lua pieces (``worqr/lua/lib``) declare what they need, and the loader
(`worqr._core.lua`) resolves it: each script and each piece includes exactly the
pieces whose functions it calls, the loader puts every piece a script needs
before the script's body, each once, each after the pieces it includes, and
refuses an unknown piece or a cycle. Pieces share no state but through their
functions' arguments and results."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from worqr._core.lua import (
    IncludeError,
    expand,
    include_order,
    includes,
    lib_pieces,
    raw_lib,
    raw_source,
    script_names,
    source,
)

FUNCTION = re.compile(r"^local function (\w+)", re.MULTILINE)
TOP_LOCAL = re.compile(r"^local (?!function)([\w, ]+?)\s*=", re.MULTILINE)


def code(text: str) -> str:
    """Lua text without its comments (no worqr script has '--' inside a string)."""
    return re.sub(r"--.*$", "", text, flags=re.MULTILINE)


def defined(piece: str) -> set[str]:
    return set(FUNCTION.findall(raw_lib(piece)))


def calls(text: str, name: str) -> bool:
    """Whether ``text`` calls the function ``name`` (not a field or method of that name)."""
    return re.search(rf"(?<![\w.:]){name}\s*\(", code(text)) is not None


def reader(pieces: dict[str, str]) -> Callable[[str], str]:
    """A piece reader over ``pieces``, as `worqr._core.lua.raw_lib` reads ``lua/lib``."""

    def read(piece: str) -> str:
        if piece not in pieces:
            raise FileNotFoundError(piece)
        return pieces[piece]

    return read


def test_pieces_come_before_their_includers_each_once() -> None:
    pieces = {
        "base": "local function base() end\n",
        "left": "--!include base\nlocal function left() base() end\n",
        "right": "--!include base\nlocal function right() base() end\n",
    }
    script = "-- s: a script\n--!include right\n--!include left\nreturn right(), left()\n"
    text = expand(script, reader(pieces), "s")
    assert include_order(["right", "left"], reader(pieces), "s") == ["base", "right", "left"]
    assert text.count("local function base") == 1
    assert text.index("function base") < text.index("function right") < text.index("function left")
    assert "--!include" not in text
    assert text.startswith("-- s: a script\n") and text.endswith("return right(), left()\n")


def test_an_include_cycle_is_refused_with_its_chain() -> None:
    pieces = {"a": "--!include b\n", "b": "--!include c\n", "c": "--!include a\n"}
    with pytest.raises(IncludeError, match=r"a -> b -> c -> a"):
        expand("--!include a\n", reader(pieces), "s")


def test_an_unknown_piece_is_refused_naming_its_includer() -> None:
    pieces = {"a": "--!include nowhere\n"}
    with pytest.raises(IncludeError, match=r"lua/lib/a\.lua includes 'nowhere'"):
        expand("--!include a\n", reader(pieces), "s")
    with pytest.raises(IncludeError, match=r"lua/s\.lua includes 'missing'"):
        expand("--!include missing\n", reader(pieces), "s")


def test_a_malformed_include_line_is_refused() -> None:
    with pytest.raises(IncludeError, match="no include line"):
        expand("--!include a\n--!include ../b\n", reader({"a": ""}), "s")


def test_every_script_loads() -> None:
    for name in script_names():
        text = source(name)
        assert "--!include" not in text, name
        for piece in include_order(includes(raw_source(name)), raw_lib, name):
            assert len(re.findall(rf"^-- lib/{piece}:", text, re.MULTILINE)) == 1, (name, piece)


def files() -> list[tuple[str, str]]:
    """Every script and piece: (its label, its text)."""
    return [(f"{name}.lua", raw_source(name)) for name in script_names()] + [
        (f"lib/{piece}.lua", raw_lib(piece)) for piece in lib_pieces()
    ]


@pytest.mark.parametrize(("label", "text"), files(), ids=[label for label, _ in files()])
def test_each_file_includes_exactly_the_pieces_it_calls(label: str, text: str) -> None:
    """A script lists what it uses, not the dependency order of what it borrows."""
    own = set(FUNCTION.findall(text))
    needed = {
        piece
        for piece in lib_pieces()
        if f"lib/{piece}.lua" != label
        and any(calls(text, function) for function in defined(piece) - own)
    }
    assert set(includes(text)) == needed, label


def test_each_function_is_defined_once() -> None:
    seen: dict[str, str] = {}
    for label, text in files():
        for function in FUNCTION.findall(text):
            assert function not in seen, f"{function}: {seen.get(function)} and {label}"
            if label.startswith("lib/"):
                seen[function] = label


def test_a_piece_only_defines() -> None:
    """At its top level a piece defines local functions and local constants: it
    runs nothing when included and sets no global."""
    for piece in lib_pieces():
        for line in code(raw_lib(piece)).splitlines():
            if line and not line[0].isspace():
                assert re.match(r"(local |end$|}$)", line), f"lib/{piece}.lua: {line}"


def test_no_file_reads_a_piece_s_locals() -> None:
    """A piece's constants and tables (STATE_NAMES, LIVE, ...) are its own: other
    pieces and scripts reach them through its functions (state_name, is_live)."""
    for piece in lib_pieces():
        names = [
            name.strip()
            for names in TOP_LOCAL.findall(code(raw_lib(piece)))
            for name in names.split(",")
        ]
        for label, text in files():
            if label == f"lib/{piece}.lua":
                continue
            for name in names:
                read = re.search(rf"\b{name}\b", code(text))
                assert not read, f"{label} reads lib/{piece}'s {name}"
