"""`worqr flow ID [--json]`: a flow's state and its jobs, found by its id alone."""

from __future__ import annotations

import json

import worqr
from tests.support.cli import assert_one_line_error, run_cli


def flow_cli(url: str, prefix: str, *args: str) -> tuple[int, str, str]:
    result = run_cli("flow", *args, "--url", url, "--prefix", prefix)
    return result.returncode, result.stdout, result.stderr


def test_flow_shows_a_chain_as_it_moves(redis_url: str, prefix: str) -> None:
    with worqr.Worqr(redis_url, prefix=prefix) as wq:
        chain = wq.submit_chain([worqr.Step("c-one", "x"), worqr.Step("c-two")])
        worker = worqr.Worqr(redis_url, prefix=prefix)
        worker.start_worker()
        try:
            worker.internals.mark_job_queue("c-one")
            _, [step], _ = worker.internals.take_jobs("c-one", [], 1)
            worker.internals.take_jobs("c-one", [(step, "s", b"y")], 0)
        finally:
            worker.close()
    code, out, err = flow_cli(redis_url, prefix, chain.id)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"flow {chain.id} (chain): running, 2 jobs"
    assert f"{chain.id}.0" in out and "finished" in out
    assert f"{chain.id}.1" in out and "queued" in out
    code, out, err = flow_cli(redis_url, prefix, chain.id, "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["id"] == chain.id and document["state"] == "running"
    assert [(j["queue"], j["id"], j["state"]) for j in document["jobs"]] == [
        ("c-one", f"{chain.id}.0", "finished"),
        ("c-two", f"{chain.id}.1", "queued"),
    ]


def test_an_unknown_flow_exits_1_with_one_line(redis_url: str, prefix: str) -> None:
    result = run_cli("flow", "nope", "--url", redis_url, "--prefix", prefix)
    assert result.stdout == ""
    assert_one_line_error(result, 1, "no flow 'nope'")
