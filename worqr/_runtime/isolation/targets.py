"""How an isolated handler is named, so that a child process can import it.

A child is a fresh interpreter: it finds the handler by its module and
qualified name, as the worker's own process could. A handler defined at the
top of a module (decorated or not) qualifies; one defined inside a function,
a lambda or a bound method does not, and registering it isolated is a
`ValueError`. A handler in the module that was run (``__main__``) is imported by
its name when it was run with ``python -m``; in a script run by its path, the
child runs the script under another name, so that its ``if __name__ ==
"__main__":`` block does not run again there.
"""

from __future__ import annotations

import importlib
import runpy
import sys
from typing import Any

Target = dict[str, str]
"""``{"module": ..., "name": ...}``, or ``{"path": ..., "name": ...}`` for ``__main__``."""

CHILD_MAIN = "__worqr_child_main__"


def target_of(function: Any, queue: str) -> Target:
    """How a child imports ``function``; `ValueError` when it cannot."""
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str) or "<" in name:
        raise ValueError(
            f"the isolated handler of queue {queue!r} must be a function defined at the "
            "top of a module (a child process imports it by module and name)"
        )
    if module == "__main__":
        main = sys.modules.get("__main__")
        spec = getattr(main, "__spec__", None)
        if spec is not None and spec.name:  # run as ``python -m package.module``
            return {"module": spec.name, "name": name}
        path = getattr(main, "__file__", None)
        if not path:
            raise ValueError(
                f"the isolated handler of queue {queue!r} is defined in an interactive "
                "session; define it in a module a child process can import"
            )
        return {"path": str(path), "name": name}
    return {"module": module, "name": name}


def resolve(target: Target, loaded: dict[str, dict[str, Any]]) -> Any:
    """The function ``target`` names, importing its module (or running the main
    script once, cached in ``loaded``)."""
    if "path" in target:
        path = target["path"]
        if path not in loaded:
            loaded[path] = runpy.run_path(path, run_name=CHILD_MAIN)
        found: Any = loaded[path]
        parts = target["name"].split(".")
        found = found[parts[0]]
    else:
        found = importlib.import_module(target["module"])
        parts = ["", *target["name"].split(".")]
    for part in parts[1:]:
        found = getattr(found, part)
    return found
