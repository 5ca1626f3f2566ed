"""The loader of the Lua pieces (`worqr._core.lua`): it puts every piece a
script needs before the script's body, each once, each after the pieces it
includes, and refuses an unknown piece or a cycle."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from worqr._core.lua import (
    IncludeError,
    expand,
    include_order,
)


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
