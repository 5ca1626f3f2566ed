"""Every python block of the README and of every page under docs/ runs, against
the test server with the test's key prefix, unless its fence states why not
(tests/docs/blocks.py says how each kind of block runs)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from tests.docs.blocks import PAGES, Block, Mesh, python_blocks, run_page
from tests.support import ROOT
from tests.support.cluster import needs_asyncio_cluster

README = ROOT / "README.md"
RUNNABLE = [page for page in PAGES if python_blocks(page)]

# What some programs print, as the page says they do: (page, a line of the
# block) -> the lines the block prints.
PRINTS = {
    (README, 'wq.enqueue("emails", "alice@example.com")'): [
        "sending to alice@example.com",
        "sending to bob@example.com",
        "sending to carol@example.com",
    ],
    (README, 'ref = wq.submit("thumbnails", "cat.png")'): ["cat.thumb.png", "finished"],
    (ROOT / "docs" / "flows.md", "chain = wq.submit_chain("): ["q3: 5"],
    (ROOT / "docs" / "jobs.md", 'ref = wq.submit("thumbnails", "cat.png")'): ["cat.thumb.png"],
    (ROOT / "docs" / "job-logs.md", 'for line in wq.get_job_log("imports", ref.id)'): [
        "attempt 1: reading customers.csv",
        "no rows yet: retrying",
        "attempt 2: reading customers.csv",
        "loaded 3 rows",
    ],
}


def every_python_block() -> list[Block]:
    return [block for page in PAGES for block in python_blocks(page)]


def test_the_pages_are_found() -> None:
    names = {page.relative_to(ROOT).as_posix() for page in PAGES}
    assert {"README.md", "docs/tasks.md", "docs/jobs.md", "docs/http.md"} <= names
    assert README in RUNNABLE


def test_every_python_fence_is_found() -> None:
    """Each ```python fence of a page is one block the tests see (a parser that
    missed some would let them go unrun without a word)."""
    for page in PAGES:
        fences = sum(line.startswith("```python") for line in page.read_text("utf-8").splitlines())
        assert len(python_blocks(page)) == fences, page


def test_every_python_fence_says_how_it_runs() -> None:
    """Nothing after ```python, a module's title="NAME.py", or norun: with a
    reason: a typo or a bare `norun` fails rather than skipping quietly."""
    for block in every_python_block():
        assert block.info == "" or block.module or block.cluster or block.reason, (
            f"{block.where}: fence info {block.info!r} is neither empty, "
            'title="NAME.py", cluster nor "norun: REASON"'
        )


def test_every_skipped_block_states_a_reason() -> None:
    skipped = [block for block in every_python_block() if block.reason is not None]
    for block in skipped:
        assert len(block.reason or "") >= 10, f"{block.where}: say why it does not run"
    # Skipping is the exception: most blocks run.
    assert len(skipped) * 4 < len(every_python_block())


def test_modules_name_their_worker() -> None:
    for block in every_python_block():
        if block.module:
            assert "worker = worqr.Worker(" in block.code, f"{block.where}: no `worker`"


def test_expected_prints_name_real_blocks() -> None:
    for (page, needle), _ in PRINTS.items():
        assert any(needle in block.code for block in python_blocks(page)), (page, needle)


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_page_blocks_run(
    page: Path, redis_url: str, prefix: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    outputs = run_page(page, Mesh(redis_url, prefix, tmp_path))
    # Under the test's prefix only: the pages' own prefixes were kept out of the server.
    for stray in ("{worqr}*", "{worqr:*", "{shop*"):
        assert not redis_client.keys(stray), f"{page.name} wrote {stray} keys"
    for block in python_blocks(page):
        for (on_page, needle), lines in PRINTS.items():
            if on_page == page and needle in block.code:
                assert outputs[block.line].splitlines() == lines, block.where


CLUSTER_BLOCKS = [block for block in every_python_block() if block.cluster]


def test_cluster_blocks_are_found() -> None:
    assert {block.page.name for block in CLUSTER_BLOCKS} >= {"cluster.md", "scaling.md"}


@pytest.mark.cluster
@pytest.mark.slow
@needs_asyncio_cluster
@pytest.mark.parametrize("block", CLUSTER_BLOCKS, ids=lambda block: block.where)
def test_cluster_blocks_run(
    block: Block, redis_cluster_url: str, prefix: str, tmp_path: Path
) -> None:
    """A block for a Redis Cluster, against the session's 3-master cluster."""
    Mesh(redis_cluster_url, prefix, tmp_path).run_program(block)
