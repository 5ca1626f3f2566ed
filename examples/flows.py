"""Flows: a chain of steps across queues (each step gets the previous step's
result) and a report that fans out to parts and in again once they all ended,
with their results. Any queues, on any masters of a Redis Cluster: each hop
goes through its queue's outbox, so no script spans two slots.

Run:  python examples/flows.py --url redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import argparse
import os
import threading
import uuid

import worqr

worker = worqr.Worker(concurrency=4)


@worker.job("fetch")
def fetch(url: str) -> str:
    return f"<html>{url}</html>"


@worker.job("parse")
def parse(html: str) -> str:
    return html.removeprefix("<html>").removesuffix("</html>").upper()


@worker.job("store")
def store(text: str) -> str:
    return f"stored {text}"


@worker.job("part", retries=0)
def part(number: str) -> str:
    if number == "13":
        raise worqr.Fail("unlucky part")
    return str(int(number) ** 2)


@worker.job("report")
def report(quarter: str) -> str:
    parts = worqr.current_job().children()  # child id -> result, in submit order
    total = sum(int(result) for result in parts.values() if isinstance(result, str))
    return f"{quarter}: {len(parts)} parts, total {total}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=os.environ.get("WORQR_REDIS_URL"))
    parser.add_argument("--prefix", default=f"example-{uuid.uuid4().hex[:8]}")
    args = parser.parse_args()
    worker.configure(url=args.url, prefix=args.prefix)
    runner = threading.Thread(target=worker.run)
    runner.start()
    try:
        with worqr.Worqr(args.url, prefix=args.prefix) as wq:
            worker.wait_started(10)
            chain = wq.submit_chain(
                [
                    worqr.Step("fetch", "https://example.com"),
                    worqr.Step("parse"),
                    worqr.Step("store"),
                ]
            )
            queue, last = chain.last
            wait(wq, chain.id)
            print("chain:", wq.result(queue, last, timeout=0))
            parts = [worqr.FlowJob("part", str(n)) for n in range(1, 11)]
            flow = wq.submit_flow(worqr.FlowJob("report", "q3", children=parts))
            print("fan-in:", wq.result("report", flow.id, timeout=20))
            parts = [worqr.FlowJob("part", str(n)) for n in (12, 13, 14)]
            for policy in ("ignore", "fail"):
                flow = wq.submit_flow(
                    worqr.FlowJob("report", policy, children=parts, on_child_failure=policy)
                )
                info = wait(wq, flow.id)
                outcome = info.jobs[0].result or info.jobs[0].error
                print(f"on_child_failure={policy}: flow {info.state}: {outcome}")
    finally:
        worker.stop()
        runner.join()


def wait(wq: worqr.Worqr, flow_id: str) -> worqr.FlowInfo:
    for _ in range(200):
        info = wq.get_flow(flow_id)
        if info.state != "running":
            return info
        threading.Event().wait(0.05)
    raise TimeoutError(f"flow {flow_id} still running")


if __name__ == "__main__":
    main()
