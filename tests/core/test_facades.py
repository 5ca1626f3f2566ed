"""`Worqr` and `AsyncWorqr` cannot drift: one written copy, one generated.

`worqr/_clients/` holds the asyncio source of every public client method
(`async_api.py`, `async_job_api.py`), of the executor of plans (`async_exec.py`)
and of the cluster subscriber (`async_shards.py`); `tools/unasync.py` writes the
sync copies from them. These tests fail when a copy is stale or a rule of the
tool matches nothing; when the two clients differ in a public name, signature
or docstring anywhere else (the constructors, properties, helpers of `Shell`);
and when the hand-written colour seams the copies import (`async_seams` /
`sync_seams`, `async_readers` / `sync_readers`) differ in a name or a signature.
"""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
from types import ModuleType

import pytest

import worqr
from tests.support import ROOT
from worqr._clients import async_readers, async_seams, sync_readers, sync_seams
from worqr._clients.async_exec import AsyncExecutor
from worqr._clients.sync_exec import SyncExecutor

OWN = {  # each client's own way to close
    worqr.Worqr: {"close"},
    worqr.AsyncWorqr: {"aclose"},
}


def public(cls: type) -> dict[str, object]:
    return {
        name: getattr(cls, name)
        for name in dir(cls)
        if not name.startswith("_") and name not in OWN[cls]
    }


def test_the_sync_copies_are_generated_from_the_async_sources() -> None:
    checked = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "unasync.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr


def unasync_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("unasync", ROOT / "tools" / "unasync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_copy_says_where_it_comes_from() -> None:
    tool = unasync_tool()
    for source, target in tool.PAIRS:
        text = (tool.CLIENTS / target).read_text("utf-8")
        assert text.startswith(tool.HEADER.format(source=source)), target


def test_a_rule_that_matches_nothing_fails_the_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = unasync_tool()
    monkeypatch.setattr(tool, "RULES", [*tool.RULES, (r"\bNoSuchName\b", "Other")])
    monkeypatch.setattr(sys, "argv", ["unasync.py", "--check"])
    assert tool.main() == 1
    assert "NoSuchName" in capsys.readouterr().err


def shape(function: object) -> list[tuple[str, object]]:
    """Parameter names and kinds (annotations differ by colour)."""
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("aio", "sync"),
    [(async_seams, sync_seams), (async_readers, sync_readers)],
    ids=["seams", "readers"],
)
def test_the_colour_seams_have_one_shape(aio: ModuleType, sync: ModuleType) -> None:
    def own(module: ModuleType) -> dict[str, object]:
        return {
            name: value
            for name, value in vars(module).items()
            if not name.startswith("_")
            and (inspect.isfunction(value) or inspect.isclass(value))
            and getattr(value, "__module__", None) == module.__name__
        }

    names = sorted(own(aio))
    assert names == sorted(own(sync))
    for name in names:
        mine, theirs = own(aio)[name], own(sync)[name]
        if inspect.isclass(mine):
            methods = {n for n in vars(mine) if not n.startswith("__") or n == "__init__"}
            assert methods == {n for n in vars(theirs) if not n.startswith("__") or n == "__init__"}
            pairs = [(getattr(mine, n), getattr(theirs, n)) for n in methods]
        else:
            pairs = [(mine, theirs)]
        for a, b in pairs:
            if callable(a):
                assert shape(a) == shape(b), name
                assert not inspect.iscoroutinefunction(b), name


def test_one_executor_in_two_colours() -> None:
    assert shape(AsyncExecutor.__init__) == shape(SyncExecutor.__init__)
    methods = {name for name in vars(AsyncExecutor) if not name.startswith("__")}
    assert methods == {name for name in vars(SyncExecutor) if not name.startswith("__")}
    for name in methods:
        aio, sync = getattr(AsyncExecutor, name), getattr(SyncExecutor, name)
        assert shape(aio) == shape(sync), name
        assert inspect.iscoroutinefunction(aio), name  # everything it does may wait
        assert not inspect.iscoroutinefunction(sync), name


def test_same_names_signatures_and_docstrings() -> None:
    sync, aio = public(worqr.Worqr), public(worqr.AsyncWorqr)
    assert sorted(sync) == sorted(aio)
    for name, method in sync.items():
        other = aio[name]
        if isinstance(method, property):
            assert isinstance(other, property), name
            assert method.__doc__ == other.__doc__, name
            continue
        assert inspect.getdoc(method), f"Worqr.{name} has no docstring"
        assert inspect.getdoc(method) == inspect.getdoc(other), name
        assert inspect.signature(method) == inspect.signature(other), name
    sync_init = inspect.signature(worqr.Worqr.__init__).parameters
    async_init = inspect.signature(worqr.AsyncWorqr.__init__).parameters
    assert [(p.name, p.kind, p.default) for p in sync_init.values()] == [
        (p.name, p.kind, p.default) for p in async_init.values()
    ]


def test_what_waits_on_redis_is_a_coroutine_in_the_async_client() -> None:
    local = {"lease_fresh", "add_observer", "add_hooks"}  # no I/O
    for name, method in public(worqr.AsyncWorqr).items():
        if isinstance(method, property):
            continue
        assert inspect.iscoroutinefunction(method) is (name not in local), name
        assert not inspect.iscoroutinefunction(getattr(worqr.Worqr, name)), name
    assert inspect.iscoroutinefunction(worqr.AsyncWorqr.aclose)
    assert inspect.iscoroutinefunction(worqr.AsyncWorqr.__aenter__)
    assert inspect.iscoroutinefunction(worqr.AsyncWorqr.__aexit__)
