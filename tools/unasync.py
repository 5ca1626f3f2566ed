"""Write the synchronous client API from the asyncio one.

    python tools/unasync.py          # rewrite worqr/_clients/sync_*api.py
    python tools/unasync.py --check  # exit 1 if one is stale (make lint, the tests)

`worqr/_clients/async_api.py` and `async_job_api.py` are the one source of the
public client methods; the sync copies differ only by the rules below, so the
two cannot drift.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / "worqr" / "_clients"
PAIRS = (("async_api.py", "sync_api.py"), ("async_job_api.py", "sync_job_api.py"))

HEADER = (
    "# Generated from {source} by tools/unasync.py: do not edit; edit {source}\n"
    "# and run `python tools/unasync.py` (make lint fails while this copy is stale).\n"
)

# (pattern, replacement), applied in order to every line.
RULES: list[tuple[str, str]] = [
    (r"^import asyncio$", "import threading"),
    (r"\basyncio\.Lock\b", "threading.Lock"),
    (r"\bAsyncApi\b", "SyncApi"),
    (r"\bAsyncJobApi\b", "SyncJobApi"),
    (r"^from \.async_job_api import", "from .sync_job_api import"),
    (r"\basync def\b", "def"),
    (r"\basync (with|for)\b", r"\1"),
    (r"\bawait ", ""),
    (r"The public methods of `AsyncWorqr`", "The public methods of `Worqr`"),
]


def unasync(text: str, source: str) -> str:
    lines = []
    for line in text.splitlines():
        for pattern, replacement in RULES:
            line = re.sub(pattern, replacement, line)
        lines.append(line)
    return HEADER.format(source=source) + "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args()
    stale = False
    for source, target in PAIRS:
        wanted = unasync((CLIENTS / source).read_text("utf-8"), source)
        path = CLIENTS / target
        current = path.read_text("utf-8") if path.exists() else ""
        if current == wanted:
            continue
        if args.check:
            print(
                f"{path.relative_to(ROOT)} is stale: run `python tools/unasync.py`", file=sys.stderr
            )
            stale = True
        else:
            path.write_text(wanted, "utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
