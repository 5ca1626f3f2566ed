r"""MkDocs hooks (mkdocs.yml `hooks:`): the README is the site's home page, and
fence info strings lose what only the docs tests read.

- The repository's README.md becomes the site's ``index.md``; its links into
  ``docs/`` lose that prefix, so the same file works on GitHub and in the site.
  A page's link back to the README (``../README.md``) points at the home page.
- ```` ```python norun: REASON ```` (tests/docs/test_blocks.py skips such a
  block) renders as ```` ```python ````; a ``title="..."`` stays, for the theme.
- In a table row, a code span's ``\|`` (GitHub needs it, or the pipe splits
  the cell) is a plain ``|``: Python-Markdown never splits a cell inside a
  code span, and would show the backslash.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
README_LINK = re.compile(r"\]\(docs/")
BACK_TO_README = re.compile(r"\]\(\.\./README\.md(#[^)]*)?\)")
FENCE = re.compile(r"^(?P<fence>```+)(?P<lang>[\w+-]+)[ \t]+(?P<info>[^\n]*)$", re.M)
TITLE = re.compile(r'title="[^"]*"')
TABLE_ROW = re.compile(r"^\|.*$", re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def readme_as_index() -> str:
    return README_LINK.sub("](", (ROOT / "README.md").read_text("utf-8"))


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "index.md", content=readme_as_index()))
    return files


def strip_info(match: re.Match[str]) -> str:
    title = TITLE.search(match["info"])
    return f"{match['fence']}{match['lang']}" + (f" {title[0]}" if title else "")


def unescape_pipes(row: re.Match[str]) -> str:
    return CODE_SPAN.sub(lambda span: span[0].replace("\\|", "|"), row[0])


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    markdown = BACK_TO_README.sub(lambda m: f"](index.md{m[1] or ''})", markdown)
    markdown = TABLE_ROW.sub(unescape_pipes, markdown)
    return FENCE.sub(strip_info, markdown)
