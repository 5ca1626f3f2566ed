"""The package's folders are its layers, and imports only go down.

    base      _checks, _errors, _keys, _settings, _process, _hooks, _jobs, _schedules, _flows,
              _version, embedded*, _parent_death, _tracing
    _core     sans-I/O: plans, script builders, replies, cluster routing
    _clients  the two colours (Worqr, AsyncWorqr), connections, subscribers
    _runtime  the Worker
    metrics   Prometheus (the only package that imports prometheus_client)
    tracing   OpenTelemetry's `TracingHooks` (with _tracing.otel, the only modules
              that import opentelemetry)
    http      the HTTP API (`worqr http`, the optional extra worqr[http])
    _cli      the subcommands and the supervisor
    web       the web view (Starlette)
    _demo     `worqr demo`
    top       worqr, worqr.cli, worqr.__main__

The base and `_core` import no socket, thread or asyncio code, and of redis-py
only its exceptions: what they decide can run anywhere, and both clients
execute it.

The layers above the clients (`_runtime`, `metrics`, `http`, `_cli`, `web`,
`_demo`, `cli`) use what a lower module offers under a public name, never a
private one (``client._core``, ``from .x import _name``): what they need of a
client is `client.internals`. A private name is reached only through ``self``
or ``cls``; a private *module* (``from .. import _checks``) is a path, which
the ranks above govern.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import ROOT

PACKAGE = ROOT / "worqr"

RANKS = {
    "_checks": 0,
    "_errors": 0,
    "_keys": 0,
    "_settings": 0,
    "_process": 0,
    "_hooks": 0,
    "_jobs": 0,
    "_dedup": 0,
    "_schedules": 0,
    "_flows": 0,
    "_version": 0,
    "embedded": 0,
    "embedded_cluster": 0,
    "_parent_death": 0,
    "_tracing": 0,
    "_core": 1,
    "_clients": 2,
    "_runtime": 3,
    "metrics": 4,
    "http": 4,
    "testing": 4,
    "tracing": 4,
    "_cli": 5,
    "web": 5,
    "_demo": 6,
    "cli": 7,
    "__init__": 7,
    "__main__": 7,
}

# What the sans-I/O layers (base and _core) may not import.
IO_MODULES = (
    "asyncio",
    "concurrent",
    "http",
    "multiprocessing",
    "prometheus_client",
    "select",
    "selectors",
    "socket",
    "ssl",
    "subprocess",
    "tenacity",
    "threading",
    "urllib",
)
# Base utilities that start servers, and the parent-death signal they ask for.
SANS_IO_EXEMPT = {"embedded", "embedded_cluster", "_parent_death"}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def layer(path: Path) -> str:
    """The layer of a module: its top folder, or its own name at the top."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def imports(path: Path) -> list[tuple[str, int]]:
    """Absolute names of every module ``path`` imports (worqr's own resolved from
    relative imports), with the line."""
    tree = ast.parse(path.read_text("utf-8"))
    package = ["worqr", *path.relative_to(PACKAGE).parent.parts]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
                if node.module is None:  # from . import x: the names are modules
                    found += [(f"{name}.{alias.name}", node.lineno) for alias in node.names]
                    continue
            else:
                name = node.module or ""
            found.append((name, node.lineno))
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_only_go_down(path: Path) -> None:
    own = layer(path)
    assert own in RANKS, f"{path.name}: put it in a layer (RANKS in this file)"
    for name, line in imports(path):
        if not name.startswith("worqr.") and name != "worqr":
            continue
        parts = name.split(".")
        target = parts[1] if len(parts) > 1 else "__init__"
        assert target in RANKS, f"{path.name}:{line} imports {name}: unknown layer"
        assert RANKS[target] <= RANKS[own], (
            f"{path.relative_to(PACKAGE)}:{line} imports {name}, a higher layer ({target})"
        )


@pytest.mark.parametrize(
    "path",
    [p for p in modules() if RANKS.get(layer(p), 99) <= 1 and layer(p) not in SANS_IO_EXEMPT],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_the_core_and_base_import_no_io(path: Path) -> None:
    for name, line in imports(path):
        top = name.split(".")[0]
        assert top not in IO_MODULES, f"{path.relative_to(PACKAGE)}:{line} imports {name}"
        if top == "redis":
            assert name == "redis.exceptions", (
                f"{path.relative_to(PACKAGE)}:{line} imports {name}: only redis.exceptions"
            )


def test_only_metrics_imports_prometheus_client() -> None:
    for path in modules():
        if layer(path) == "metrics":
            continue
        for name, line in imports(path):
            assert not name.startswith("prometheus_client"), f"{path.name}:{line}"


def test_only_the_pytest_plugin_imports_pytest() -> None:
    for path in modules():
        if layer(path) == "testing":
            continue
        for name, line in imports(path):
            assert name.split(".")[0] not in ("pytest", "_pytest"), f"{path.name}:{line}"


GOD_MODULE_LINES = 500


def test_no_module_grows_into_a_god_module() -> None:
    """Module size is a guideline, not a gate: a module much over ~300 lines
    usually holds two ideas (docs/design.md, the module map), and review judges
    that; a count enforced there invites trimming comments or cutting a file in
    two to fit. This test only catches the far end, past 500 lines, where a
    module surely holds several ideas (rq's 2,000-line job.py): split it by its
    ideas. Generated code aside."""
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in modules()
        if (lines := len(path.read_text("utf-8").splitlines())) > GOD_MODULE_LINES
        and not path.read_text("utf-8").startswith("# Generated")
    }
    assert not long, long


# The layers above the clients, which use only what lower modules name publicly.
UPPER = {"_runtime", "metrics", "http", "_cli", "web", "_demo", "cli", "testing"}
# Private names of other libraries with no public spelling, each with its reason.
FOREIGN_PRIVATE = {
    # The type add_subparsers() returns: argparse has no public name for it.
    ("_cli/parser.py", "argparse._SubParsersAction"),
    # A NamedTuple's own public method: the underscore only keeps it from field names.
    ("_cli/health_report.py", "report._asdict"),
    # A handler child whose worker died exits from its watcher thread, where
    # `sys.exit` would end only that thread; a stopped one exits as soon as its
    # handler unwound, without the interpreter's teardown the worker waits for.
    ("_runtime/isolation/child.py", "os._exit"),
}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_module(package: list[str], name: str) -> bool:
    """Whether ``name`` (from ``package``, as a `from ... import` gives it) is a
    module or package of worqr."""
    path = PACKAGE.parent.joinpath(*package, name)
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def private_reaches(path: Path) -> list[tuple[int, str]]:
    """Where ``path`` reaches into another object's or module's private names:
    ``x._name`` with x not ``self``/``cls``, and ``from m import _name`` with
    _name not a module."""
    tree = ast.parse(path.read_text("utf-8"))
    package = ["worqr", *path.relative_to(PACKAGE).parent.parts]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            source = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                if is_private(alias.name) and not is_module(source, alias.name):
                    found.append((node.lineno, f"from {'.'.join(source)} import {alias.name}"))
    return found


@pytest.mark.parametrize(
    "path",
    [p for p in modules() if layer(p) in UPPER],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_upper_layers_use_only_public_names(path: Path) -> None:
    where = path.relative_to(PACKAGE).as_posix()
    reaches = [
        f"{where}:{line} {expression}"
        for line, expression in private_reaches(path)
        if (where, expression) not in FOREIGN_PRIVATE
    ]
    assert not reaches, f"private names reached from a layer above the clients: {reaches}"
