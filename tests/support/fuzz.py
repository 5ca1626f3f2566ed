"""Schemathesis against a real `worqr http`: the harness of `tests/http/test_fuzz.py`.

`served(...)` starts `worqr http --port 0` (a subprocess, as a user runs it)
and yields its URL; `run_schemathesis(...)` runs Schemathesis's own command
line, ``st run``, in another subprocess against that URL's ``/openapi.json``:
every check, the examples, coverage, fuzzing and stateful phases, one worker,
a fixed seed, derandomized generation, a bounded example count. Its report
(each failure with the curl command that reproduces it) is what a failing
test shows.

A bigger campaign by hand, through the environment (tests/README.md):

- ``WORQR_FUZZ_EXAMPLES``: examples per operation and phase (default `EXAMPLES`);
- ``WORQR_FUZZ_SEED``: the seed (default `SEED`);
- ``WORQR_FUZZ_ST_ARGS``: more ``st run`` arguments, shell-quoted (e.g.
  ``--report json --report-dir /tmp/fuzz``, ``--max-failures 1``).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT
from tests.support.cli import cli_env, start_cli
from tests.support.processes import stop
from tests.support.waiting import wait_until

EXAMPLES = 10
"""Examples per operation in the fuzzing phase (and the stateful phase's budget)."""
SEED = 27
CHECKS = "all"
PHASES = "examples,coverage,fuzzing,stateful"
REQUEST_TIMEOUT = 10.0
"""Seconds per request: far above any answer of this server (the hooks cap
``?wait=``; an event stream is read up to its first event)."""

CONFIG = """\
# Written by tests/support/fuzz.py for one run.
hooks = "tests.support.fuzz_hooks"
# An event stream of a job that has not ended stays open: read its first
# event (the job's state), then close it.
max-stream-events = 1
[cache]
directory = "{cache}"
"""


@dataclass(frozen=True)
class Campaign:
    examples: int
    seed: int
    extra_args: tuple[str, ...]

    @classmethod
    def from_env(cls) -> Campaign:
        return cls(
            examples=int(os.environ.get("WORQR_FUZZ_EXAMPLES", EXAMPLES)),
            seed=int(os.environ.get("WORQR_FUZZ_SEED", SEED)),
            extra_args=tuple(shlex.split(os.environ.get("WORQR_FUZZ_ST_ARGS", ""))),
        )


@dataclass(frozen=True)
class Served:
    url: str
    log: Path


def _serving_url(log: Path) -> str | None:
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("worqr http: serving on "):
            return line.split()[4]
    return None


@contextmanager
def served(
    redis_url: str, prefix: str, directory: Path, *, token_file: Path | None = None
) -> Iterator[Served]:
    """`worqr http` on a free loopback port, over ``prefix`` of ``redis_url``
    (its output in ``directory/server.log``); killed after."""
    log = directory / "server.log"
    args = ["http", "--port", "0", "--url", redis_url, "--prefix", prefix, "--no-access-log"]
    if token_file is not None:
        args += ["--token-file", str(token_file)]
    with open(log, "wb") as out:
        process = start_cli(*args, stdout=out, stderr=subprocess.STDOUT)
    try:

        def started() -> str | None:
            if process.poll() is not None:
                raise AssertionError(f"worqr http exited {process.returncode}:\n{log.read_text()}")
            return _serving_url(log)

        yield Served(wait_until(started, timeout=30, message="worqr http serving"), log)
    finally:
        stop(process)


@dataclass(frozen=True)
class Outcome:
    command: list[str]
    returncode: int
    output: str
    seconds: float


def st_command(url: str, config: Path, campaign: Campaign, *, token: str | None) -> list[str]:
    """The ``st run`` command line of one run (the token, if any, as a header).

    ``--generation-deterministic`` derandomizes Hypothesis and keeps no example
    database; an explicit ``--seed`` still takes precedence over it (the same
    seed sends the same requests, another seed others), although the report's
    last lines say "Seed: not used in the deterministic mode" (Schemathesis
    4.32's wording; its JSON report records the seed)."""
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        f"{url}/openapi.json",
        "--url",  # the server under test, whatever `servers` the document names
        url,
        "--checks",
        CHECKS,
        "--phases",
        PHASES,
        "--workers",
        "1",
        "--seed",
        str(campaign.seed),
        "--generation-deterministic",
        "--max-examples",
        str(campaign.examples),
        "--request-timeout",
        str(REQUEST_TIMEOUT),
        "--no-color",
    ]
    if token is not None:
        command += ["--header", f"Authorization: Bearer {token}"]
    return command + list(campaign.extra_args)


def run_schemathesis(
    url: str, directory: Path, campaign: Campaign, *, token: str | None = None
) -> Outcome:
    """Run ``st run`` against ``url`` in ``directory`` (its config file, its
    cache, Hypothesis's folder); its whole output, stdout and stderr."""
    config = directory / "schemathesis.toml"
    config.write_text(CONFIG.format(cache=directory / "cache"))
    command = st_command(url, config, campaign, token=token)
    env = cli_env(PYTHONPATH=str(ROOT))  # the hooks module, tests.support.fuzz_hooks
    began = time.monotonic()
    result = subprocess.run(
        command,
        cwd=directory,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
    )
    return Outcome(command, result.returncode, result.stdout, time.monotonic() - began)
