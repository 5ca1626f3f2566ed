"""Runs one program block of the documentation (tests/docs/blocks.py starts it:
``python -m tests.docs.run_block FILE WHERE PREFIX``, from the repository's
root, so that ``worqr`` is this checkout's).

The default key prefix of every `worqr.Settings` becomes PREFIX before the
block runs, so that its clients and workers stay in the test's own keys; the
block then runs as ``__main__``, its tracebacks naming WHERE (page:line).
"""

from __future__ import annotations

import sys
from pathlib import Path

import worqr


def main() -> None:
    path, where, prefix = sys.argv[1:4]
    defaults = worqr.Settings.__init__.__defaults__
    assert defaults is not None and defaults[0] == "worqr", "Settings' first field is prefix"
    worqr.Settings.__init__.__defaults__ = (prefix, *defaults[1:])
    assert worqr.Settings().prefix == prefix
    code = compile(Path(path).read_text("utf-8"), where.rsplit(":", 1)[0], "exec")
    sys.argv = [where]
    exec(code, {"__name__": "__main__", "__builtins__": __builtins__})


if __name__ == "__main__":
    main()
