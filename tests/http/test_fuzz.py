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
--timeout=0 tests/http/test_fuzz.py`` (tests/README.md). The last test checks
the harness's own hook (`support/fuzz_hooks.py`), which keeps ``?wait=`` short.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.http.conftest import TOKEN
from tests.support.fuzz import Campaign, run_schemathesis, served

# ?wait= as a bounded, optional number (the way pydantic writes one).
WAIT_SCHEMA = {"anyOf": [{"type": "number", "minimum": 0, "maximum": 60}, {"type": "null"}]}


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


@pytest.mark.parametrize(
    ("documented", "sent", "expected"),
    [
        (WAIT_SCHEMA, 30, 0.2),
        (WAIT_SCHEMA, "60", "0.2"),  # the coverage phase sends query values as text
        (WAIT_SCHEMA, 0.1, 0.1),
        (WAIT_SCHEMA, 61, 61),  # rejected by the document: sent as generated
        (WAIT_SCHEMA, -1, -1),
        (WAIT_SCHEMA, "soon", "soon"),
        ({"$ref": "#/components/schemas/Wait"}, 30, 0.2),
        ({"$ref": "#/components/schemas/Wait"}, 61, 61),
        ({"$ref": "#/nowhere"}, 61, 0.2),  # unreadable: shortened, to stay short
    ],
)
def test_the_hook_shortens_the_waits_the_document_accepts(
    documented: dict[str, object], sent: object, expected: object
) -> None:
    from tests.support.fuzz_hooks import before_call  # imports Schemathesis

    wait = SimpleNamespace(name="wait", definition={"in": "query", "schema": documented})
    document = {"openapi": "3.1.0", "components": {"schemas": {"Wait": WAIT_SCHEMA}}}
    operation = SimpleNamespace(query=[wait], schema=SimpleNamespace(raw_schema=document))
    case = SimpleNamespace(query={"wait": sent}, operation=operation)
    before_call(None, case, {})
    assert case.query == {"wait": expected}
