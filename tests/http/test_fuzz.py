"""Schemathesis, an independent fuzzer, against a real `worqr http` (issue 27).

`worqr http` runs as a process on a free loopback port over the test's Redis
and a fresh prefix, once without a token and once with ``--token-file`` (the
bearer header given to Schemathesis), and Schemathesis's own command line
runs against its ``/openapi.json``: every check, the examples, coverage,
fuzzing and stateful phases, one worker, a fixed seed, derandomized, a
bounded example count (`tests.support.fuzz`). Any failure of any check fails
the test with Schemathesis's report: each failure with the curl commands that
reproduce it.

No worker runs: the fuzzer draws queue names at random (a path parameter), so
the jobs a stateful scenario submits land on queues no worker would serve. The
scenarios still chain real requests: a submit, then that job's status, result
(202 while it waits), events, cancel and retry, by the links the document
declares and those Schemathesis infers from ``Location`` headers.

A bigger campaign: ``WORQR_FUZZ_EXAMPLES=300 WORQR_FUZZ_SEED=1 pytest
--timeout=0 tests/http/test_fuzz.py`` (tests/README.md).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.http.conftest import TOKEN
from tests.support.fuzz import Campaign, run_schemathesis, served


@pytest.mark.slow
@pytest.mark.parametrize("token", [None, TOKEN], ids=["no-token", "token"])
def test_schemathesis_finds_nothing(
    redis_url: str, prefix: str, tmp_path: Path, token: str | None
) -> None:
    token_file = None
    if token is not None:
        token_file = tmp_path / "token.txt"
        token_file.write_text(token + "\n")
        token_file.chmod(0o600)
    campaign = Campaign.from_env()
    with served(redis_url, prefix, tmp_path, token_file=token_file) as server:
        outcome = run_schemathesis(server.url, tmp_path, campaign, token=token)
    command = shlex.join(outcome.command)
    if outcome.returncode != 0:
        pytest.fail(
            f"Schemathesis found failures (exit {outcome.returncode}, {outcome.seconds:.0f} s); "
            f"server log: {server.log}\n$ {command}\n\n{outcome.output}",
            pytrace=False,
        )
