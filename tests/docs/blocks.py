"""The python blocks of the README and of every page under docs/, and how each runs.

A block's fence says how (the words after ```` ```python ````):

- nothing: a program. It runs in a fresh interpreter to its end (exit 0).
  One that ends by running a worker (``worker.run()`` at the top level) runs
  until its worker has registered in the mesh; then it gets SIGTERM, and must
  stop gracefully (exit 0), as the page says it does.
- ``title="NAME.py"``: a module holding ``worker``, a `worqr.Worker` (the
  theme shows the title as the file's name). It runs the way its page runs it,
  ``worqr worker NAME:worker``, while the next python block of the page runs;
  then it gets SIGTERM and must exit 0. A module with no python block after it
  is started, seen to register, and stopped the same way.
- ``cluster``: a program for a Redis Cluster. It runs (as a program, above)
  against the test's own 3-master cluster, whose node's URL replaces the
  page's (``redis://10.0.0.5:7000``); `test_cluster_blocks_run` runs these.
- ``norun: REASON``: not run; the reason must be written (Sentinels at
  addresses of their own, say).

Every block runs against the test server with the test's key prefix: the
default URL the pages use (``redis://127.0.0.1:6379/0``, or none:
``$WORQR_REDIS_URL``) becomes the test server's; the default prefix (``worqr``)
becomes the test's, and a prefix the block names (``prefix="shop"``) goes
under it (``<test prefix>:shop``). Tracebacks name the page and its line.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.support import ROOT
from tests.support.processes import stop
from tests.support.waiting import wait_until

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
"""Every page of the documentation: the README (the site's home) and docs/*.md."""

FENCE = re.compile(
    r"^(?P<fence>```+)(?P<lang>[\w+-]*)[ \t]*(?P<info>[^\n]*)\n(?P<code>.*?)^(?P=fence)[ \t]*$",
    re.S | re.M,
)
TITLE = re.compile(r'^title="(?P<name>[A-Za-z_]\w*)\.py"$')
NORUN = re.compile(r"^norun:\s*(?P<reason>\S.*)$")
RUNS_A_WORKER = re.compile(r"^\w+\.run\(\)", re.M)
DEFAULT_URL = "redis://127.0.0.1:6379/0"
CLUSTER_URL = "redis://10.0.0.5:7000"  # the cluster node the pages name
NAMED_PREFIX = re.compile(r'prefix="([^"]*)"')
TIMEOUT = 60.0


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # the line of the opening fence, 1-based
    lang: str
    info: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def module(self) -> str | None:
        """The module's name, for a block titled ``NAME.py``."""
        match = TITLE.match(self.info)
        return match["name"] if match else None

    @property
    def reason(self) -> str | None:
        """Why the block does not run (``norun: REASON``), else None."""
        match = NORUN.match(self.info)
        return match["reason"].strip() if match else None

    @property
    def cluster(self) -> bool:
        return self.info == "cluster"

    @property
    def runs_a_worker(self) -> bool:
        return bool(RUNS_A_WORKER.search(self.code))


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order."""
    text = page.read_text("utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, line, match["lang"], match["info"].strip(), match["code"]))
    return found


def python_blocks(page: Path) -> list[Block]:
    return [block for block in blocks(page) if block.lang == "python"]


def for_test(code: str, redis_url: str, prefix: str) -> str:
    """The block's code against the test server, under the test's prefix."""
    code = code.replace(DEFAULT_URL, redis_url).replace(CLUSTER_URL, redis_url)
    return NAMED_PREFIX.sub(lambda match: f'prefix="{prefix}:{match[1]}"', code)


@dataclass
class Mesh:
    """Where the blocks of one test run: the server, the prefix, a scratch folder."""

    redis_url: str
    prefix: str
    folder: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, WORQR_REDIS_URL=self.redis_url, PYTHONUNBUFFERED="1")
        env.update(extra)
        return env

    def workers(self) -> set[bytes]:
        """The registered workers of the test's prefix (and of prefixes under it)."""
        with redis.Redis.from_url(self.redis_url) as client:
            keys = list(client.scan_iter(match=f"{{{self.prefix}*}}:workers"))
            return set().union(*(client.smembers(key) for key in keys))

    def wait_registered(self, process: subprocess.Popen[str], before: set[bytes]) -> None:
        """Until a worker not in ``before`` registered, or ``process`` ended (the
        caller says which)."""
        wait_until(
            lambda: process.poll() is not None or self.workers() - before,
            timeout=TIMEOUT,
            interval=0.05,
            message="no worker registered",
        )

    # -- programs -------------------------------------------------------------------

    def start_program(self, block: Block) -> subprocess.Popen[str]:
        # Padded with empty lines, so that a traceback's line is the page's.
        source = "\n" * block.line + for_test(block.code, self.redis_url, self.prefix)
        path = self.folder / f"block_{block.line}.py"
        path.write_text(source, "utf-8")
        return subprocess.Popen(
            [sys.executable, "-m", "tests.docs.run_block", str(path), block.where, self.prefix],
            cwd=ROOT,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run_program(self, block: Block) -> str:
        """Run a program block to its end (or, one that runs a worker, until it
        registered and then SIGTERM); its stdout."""
        before = self.workers()
        process = self.start_program(block)
        try:
            if block.runs_a_worker:
                self.wait_registered(process, before)
                if process.poll() is not None:
                    _, err = process.communicate()
                    raise AssertionError(f"{block.where} ended before its worker ran:\n{err}")
                process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=TIMEOUT)
        finally:
            stop(process)
        assert process.returncode == 0, f"{block.where} exited {process.returncode}:\n{err}"
        return out

    # -- modules --------------------------------------------------------------------

    @contextlib.contextmanager
    def module_worker(self, block: Block) -> Iterator[None]:
        """``worqr worker NAME:worker`` on the module block, registered, for the
        duration; then SIGTERM, and a graceful exit."""
        name = block.module
        assert name is not None
        folder = self.folder / f"module_{block.line}"
        folder.mkdir()
        (folder / f"{name}.py").write_text(for_test(block.code, self.redis_url, self.prefix))
        command = [sys.executable, "-m", "worqr", "worker", f"{name}:worker"]
        command += ["--url", self.redis_url, "--prefix", self.prefix, "--grace", "5"]
        before = self.workers()
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=self.env(PYTHONPATH=str(folder)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            self.wait_registered(process, before)
            if process.poll() is not None:
                _, err = process.communicate()
                raise AssertionError(f"`worqr worker {name}:worker` of {block.where} ended:\n{err}")
            yield
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=TIMEOUT)
            assert process.returncode == 0, (
                f"`worqr worker {name}:worker` of {block.where} exited "
                f"{process.returncode} on SIGTERM:\n{err}"
            )
        finally:
            stop(process)


def run_page(page: Path, mesh: Mesh) -> dict[int, str]:
    """Run the page's python blocks in order (see the module's docstring); the
    stdout of each program, by its line."""
    outputs: dict[int, str] = {}
    module: Block | None = None
    for block in python_blocks(page):
        if block.reason is not None or block.cluster:
            continue
        if block.module is not None:
            if module is not None:  # a module with no program after it
                with mesh.module_worker(module):
                    pass
            module = block
            continue
        if module is not None:
            with mesh.module_worker(module):
                outputs[block.line] = mesh.run_program(block)
            module = None
        else:
            outputs[block.line] = mesh.run_program(block)
    if module is not None:
        with mesh.module_worker(module):
            pass
    return outputs
