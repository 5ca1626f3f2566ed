"""Write the synchronous client API from the asyncio one.

    python tools/unasync.py          # rewrite worqr/_clients/sync_api.py
    python tools/unasync.py --check  # exit 1 if it is stale (make lint, the tests)

`worqr/_clients/async_api.py` is the one source of the public client methods;
the sync copy differs only by the rules below, so the two cannot drift.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "worqr" / "_clients" / "async_api.py"
TARGET = ROOT / "worqr" / "_clients" / "sync_api.py"

HEADER = (
    "# Generated from async_api.py by tools/unasync.py: do not edit; edit async_api.py\n"
    "# and run `python tools/unasync.py` (make lint fails while this copy is stale).\n"
)

# (pattern, replacement), applied in order to every line.
RULES: list[tuple[str, str]] = [
    (r"^import asyncio$", "import threading"),
    (r"\basyncio\.Lock\b", "threading.Lock"),
    (r"\bAsyncApi\b", "SyncApi"),
    (r"\basync def\b", "def"),
    (r"\basync (with|for)\b", r"\1"),
    (r"\bawait ", ""),
    (r"The public methods of `AsyncWorqr`", "The public methods of `Worqr`"),
]


def unasync(text: str) -> str:
    lines = []
    for line in text.splitlines():
        for pattern, replacement in RULES:
            line = re.sub(pattern, replacement, line)
        lines.append(line)
    return HEADER + "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if stale")
    args = parser.parse_args()
    wanted = unasync(SOURCE.read_text("utf-8"))
    current = TARGET.read_text("utf-8") if TARGET.exists() else ""
    if args.check:
        if current != wanted:
            print(
                f"{TARGET.relative_to(ROOT)} is stale: run `python tools/unasync.py`",
                file=sys.stderr,
            )
            return 1
        return 0
    if current != wanted:
        TARGET.write_text(wanted, "utf-8")
        print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
