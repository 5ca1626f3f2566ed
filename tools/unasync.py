"""Write the synchronous client code from the asyncio one.

    python tools/unasync.py          # rewrite the generated copies (PAIRS)
    python tools/unasync.py --check  # exit 1 if one is stale or a rule is unused (make lint)

Each source in `worqr/_clients/` is the one copy of its logic: the public
client methods (`async_api.py`, `async_job_api.py`), the executor of plans
(`async_exec.py`) and the cluster subscriber (`async_shards.py`). The sync
copies differ only by the rules below, so the two cannot drift; what truly
differs by colour is hand-written, in `async_seams.py` / `sync_seams.py` and
`async_readers.py` / `sync_readers.py`. A rule that matches nothing in any
source is an error (as in httpcore's unasync check): rules cannot rot.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / "worqr" / "_clients"
PAIRS = (
    ("async_api.py", "sync_api.py"),
    ("async_job_api.py", "sync_job_api.py"),
    ("async_exec.py", "sync_exec.py"),
    ("async_shards.py", "shards.py"),
)

HEADER = (
    "# Generated from {source} by tools/unasync.py: do not edit; edit {source}\n"
    "# and run `python tools/unasync.py` (make lint fails while this copy is stale).\n"
)

# (pattern, replacement), applied in order to every line.
RULES: list[tuple[str, str]] = [
    (r"^import asyncio$", "import threading"),
    (r"\basyncio\.Lock\b", "threading.Lock"),
    (r"\bAsync(Api|JobApi|Executor|Internals)\b", r"Sync\1"),
    (r"\bAsyncClusterSubscriber\b", "ClusterSubscriber"),
    (r"\bAsyncRetrying\b", "Retrying"),
    (r"^from \.async_(\w+) import", r"from .sync_\1 import"),
    (r"\basync def aclose\b", "def close"),
    (r"\basync def\b", "def"),
    (r"\basync (with|for)\b", r"\1"),
    (r"\bawait ", ""),
    (r"The public methods of `AsyncWorqr`", "The public methods of `Worqr`"),
]


def unasync(text: str, source: str, used: set[str] | None = None) -> str:
    """The sync copy of ``text`` (the file ``source``); adds to ``used`` the
    pattern of every rule that matched."""
    lines = []
    for line in text.splitlines():
        for pattern, replacement in RULES:
            line, count = re.subn(pattern, replacement, line)
            if count and used is not None:
                used.add(pattern)
        lines.append(line)
    return HEADER.format(source=source) + "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args()
    failed = False
    used: set[str] = set()
    for source, target in PAIRS:
        wanted = unasync((CLIENTS / source).read_text("utf-8"), source, used)
        path = CLIENTS / target
        current = path.read_text("utf-8") if path.exists() else ""
        if current == wanted:
            continue
        if args.check:
            print(
                f"{path.relative_to(ROOT)} is stale: run `python tools/unasync.py`", file=sys.stderr
            )
            failed = True
        else:
            path.write_text(wanted, "utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    for pattern, _ in RULES:
        if pattern not in used:
            print(f"tools/unasync.py: the rule {pattern!r} matches nothing", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
