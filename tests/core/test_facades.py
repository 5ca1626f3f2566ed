"""`Worqr` and `AsyncWorqr` cannot drift: one written API, one generated copy.

`worqr/_clients/async_api.py` and `async_job_api.py` are the source of every
public client method; `tools/unasync.py` writes `sync_api.py` and
`sync_job_api.py` from them. These tests fail when that copy
is stale, and when the two clients differ in a public name, signature or
docstring anywhere else (the constructors, properties, helpers of `Shell`).
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import worqr
from tests.support import ROOT

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


def test_the_sync_api_is_generated_from_the_async_one() -> None:
    checked = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "unasync.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr


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
