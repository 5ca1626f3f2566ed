"""The maps stay true: docs/design.md's module map names every module of the
package (each ``.py`` of every package folder, and each Lua piece of
``worqr/lua/lib/``) and nothing that is gone; tests/README.md names every test
folder; docs/metrics.md names every event the exporter exports and every panel
of the Grafana dashboard. Each reads the tree as it is, so a module, a piece,
a folder, an event or a panel added without its line in the map fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.support import ROOT, TESTS
from worqr.metrics.collector import JOB_EVENTS, TASK_EVENTS

PACKAGE = ROOT / "worqr"
PIECES = PACKAGE / "lua" / "lib"
DESIGN = ROOT / "docs" / "design.md"
TESTS_README = TESTS / "README.md"
METRICS = ROOT / "docs" / "metrics.md"
DASHBOARD = ROOT / "grafana" / "dashboards" / "worqr.json"
NAME = re.compile(r"`([^`]+)`")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
TOP_ROWS = ("base", "top")  # the module map's rows of the modules directly in worqr/


def section(text: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no section {heading!r}"
    return match.group(1)


def table(text: str) -> list[list[str]]:
    """The rows of the first Markdown table in ``text`` (header and rule dropped)."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[2:]]


def names(cell: str) -> set[str]:
    """The identifiers a cell names in backticks."""
    return {name for name in NAME.findall(cell) if IDENTIFIER.fullmatch(name)}


def module_map() -> dict[str, set[str]]:
    """The module map: its rows' first cells (``_core/``, ``base``) -> the names
    in their modules cell."""
    rows = table(section(DESIGN.read_text("utf-8"), "Module map"))
    found: dict[str, set[str]] = {}
    for layer, modules, *_ in rows:
        key = layer.strip("`")
        assert key not in found, f"the module map has two rows {key!r}"
        found[key] = names(modules)
    return found


def package_folders() -> dict[str, set[str]]:
    """Every folder of worqr/ with Python modules (``_core/``) -> their names;
    the modules directly in worqr/ under ""."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        folder = path.parent.relative_to(PACKAGE).as_posix()
        key = "" if folder == "." else f"{folder}/"
        found.setdefault(key, set()).add(path.stem)
    return found


def test_the_module_map_names_every_module() -> None:
    mapped = module_map()
    for folder, modules in package_folders().items():
        if folder:
            assert folder in mapped, f"the module map has no row for worqr/{folder}"
            listed = mapped[folder]
        else:
            listed = set().union(*(mapped.get(row, set()) for row in TOP_ROWS))
        missing = sorted(modules - listed)
        row = f"worqr/{folder} row" if folder else "base and top rows"
        assert not missing, f"the module map's {row} lack {missing}"


def test_the_module_map_names_nothing_that_is_gone() -> None:
    mapped = module_map()
    folders = package_folders()
    top = set().union(*(mapped.get(row, set()) for row in TOP_ROWS))
    assert top <= folders[""], f"not in worqr/: {sorted(top - folders[''])}"
    for folder, listed in mapped.items():
        if folder in TOP_ROWS or folder in ("lua/", "lua/lib/"):
            continue
        assert folder in folders, f"the module map's row {folder!r} is no folder of worqr/"
        gone = sorted(listed - folders[folder])
        assert not gone, f"the module map's worqr/{folder} row names {gone}"


def test_the_module_map_names_every_lua_piece() -> None:
    """Read from the tree: the pieces may be split or renamed, and the map with them."""
    pieces = {path.stem for path in PIECES.glob("*.lua")}
    assert pieces, "no Lua pieces found"
    listed = module_map().get("lua/lib/")
    assert listed is not None, "the module map has no row for worqr/lua/lib/"
    assert not pieces - listed, f"the module map's lua/lib/ row lacks {sorted(pieces - listed)}"
    assert not listed - pieces, f"the module map's lua/lib/ row names {sorted(listed - pieces)}"


def piece_graph() -> dict[str, set[str]]:
    """The piece graph of docs/design.md ("The script boundary"): each piece ->
    the pieces it includes, from its ``name <- a, b`` entries (two to a line) and
    its leaves (a line of bare names)."""
    text = DESIGN.read_text("utf-8")
    block = re.search(r"the leaves include none\):\n\n```text\n(.*?)```", text, re.S)
    assert block, "docs/design.md has no piece graph"
    graph: dict[str, set[str]] = {}
    entry = re.compile(r"(\w+)\s+<-\s+(\w+(?:, \w+)*)")
    for line in block.group(1).splitlines():
        for name, needs in entry.findall(line):
            graph[name] = set(needs.split(", "))
        graph.update((leaf, set()) for leaf in entry.sub("", line).split())
    return graph


def test_the_piece_graph_is_what_the_pieces_include() -> None:
    """A piece that gains or drops an ``--!include`` changes its line in the graph."""
    included = {
        path.stem: set(re.findall(r"^--!include (\w+)$", path.read_text("utf-8"), re.M))
        for path in PIECES.glob("*.lua")
    }
    graph = piece_graph()
    assert sorted(graph) == sorted(included), "the piece graph names other pieces than lua/lib/"
    wrong = {name: sorted(needs) for name, needs in included.items() if graph[name] != needs}
    assert not wrong, f"the piece graph says otherwise of {wrong}"


def test_the_tests_readme_names_every_test_folder() -> None:
    text = TESTS_README.read_text("utf-8")
    rows = table(section(text, "Folders: one per layer"))
    listed = {row[0].strip("`").rstrip("/") for row in rows}
    folders = {
        path.name for path in TESTS.iterdir() if path.is_dir() and path.name != "__pycache__"
    }
    assert not folders - listed, f"tests/README.md's folder table lacks {sorted(folders - listed)}"
    assert not listed - folders, f"tests/README.md's folder table names {sorted(listed - folders)}"
    # Folders inside them (worker modules, test data) are named somewhere in the file.
    for path in TESTS.glob("*/*/"):
        if path.is_dir() and path.name != "__pycache__":
            inner = path.relative_to(TESTS).as_posix()
            assert f"{inner}/" in text, f"tests/README.md does not name {inner}/"


def test_metrics_md_names_every_exported_event() -> None:
    row = next(
        line
        for line in METRICS.read_text("utf-8").splitlines()
        if line.startswith("| `worqr_queue_events_total` |")
    )
    documented = set(NAME.findall(row))
    missing = sorted(set(TASK_EVENTS + JOB_EVENTS) - documented)
    assert not missing, f"docs/metrics.md's worqr_queue_events_total lacks {missing}"


def dashboard_titles() -> list[str]:
    def walk(panels: list[dict[str, Any]]) -> list[str]:
        found = []
        for panel in panels:
            found.append(panel["title"])
            found += walk(panel.get("panels", []))  # a collapsed row nests its panels
        return found

    return walk(json.loads(DASHBOARD.read_text("utf-8"))["panels"])


def test_metrics_md_names_every_dashboard_row_and_panel() -> None:
    text = " ".join(section(METRICS.read_text("utf-8"), "Grafana and docker compose").split())
    for title in dashboard_titles():
        assert title.lower() in text.lower(), (
            f"docs/metrics.md does not name the dashboard's {title!r}"
        )


def test_the_pages_links_to_guides_exist() -> None:
    """The README's links into docs/ resolve (the site's build checks the rest)."""
    readme = (ROOT / "README.md").read_text("utf-8")
    targets = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert targets
    for target in targets:
        assert Path(ROOT / target).is_file(), target
