"""The health probes' deployment examples: docker-compose.yml's worker
healthcheck (run for real against the worker command it checks) and the
Kubernetes Deployment in docs/cli.md (parsed, its command parsed by the
command line, its probes aimed at what the worker serves)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import ROOT
from tests.support.cli import cli_env, start_cli
from tests.support.processes import stop
from tests.support.waiting import wait_until
from worqr._runtime.probes import ProbeServer
from worqr.cli import build_parser
from worqr.embedded import free_port

from .blocks import blocks

COMPOSE = ROOT / "docker-compose.yml"
GUIDE = ROOT / "docs" / "cli.md"


def option(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def worker_service() -> dict[str, Any]:
    service: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())["services"]["worker"]
    return service


def healthcheck_command(service: dict[str, Any]) -> list[str]:
    test = [str(word) for word in service["healthcheck"]["test"]]
    assert test[0] == "CMD", "exec form: no shell in the image's way"
    return test[1:]


def test_the_compose_healthcheck_probes_the_port_the_worker_serves() -> None:
    service = worker_service()
    words = [str(word) for word in service["command"]]
    args = build_parser().parse_args(words[1:])
    assert args.health_port is not None
    assert args.health_host in (None, "127.0.0.1")  # probed inside the container
    check = healthcheck_command(service)
    assert check[:2] == ["python", "-c"]
    assert f"http://127.0.0.1:{args.health_port}/livez" in check[2]
    health = service["healthcheck"]
    assert health["retries"] >= 2 and "start_period" in health


@pytest.mark.slow
def test_the_compose_healthcheck_passes_on_a_live_worker_and_fails_on_a_503(
    redis_url: str, prefix: str, tmp_path: Path
) -> None:
    """The service's own command and healthcheck, on ports of the test's own."""
    service = worker_service()
    words = [str(word) for word in service["command"]]
    served = option(words, "--health-port")
    metrics = option(words, "--metrics-port")
    assert served is not None and metrics is not None
    port = str(free_port())
    words[words.index("--health-port") + 1] = port
    words[words.index("--metrics-port") + 1] = str(free_port())
    check = [
        sys.executable if word == "python" else word.replace(f":{served}/", f":{port}/")
        for word in healthcheck_command(service)
    ]

    def healthy() -> bool:
        return subprocess.run(check, capture_output=True, timeout=10).returncode == 0

    env = cli_env(PYTHONPATH=str(ROOT))
    with open(tmp_path / "worker.log", "wb") as log:
        worker = start_cli(
            *words[1:], "--url", redis_url, "--prefix", prefix, env=env, stdout=log, stderr=log
        )
    try:
        wait_until(healthy, timeout=30, interval=0.2, message="the healthcheck passes")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0
    finally:
        stop(worker)
    assert not healthy()  # nothing serves the port any more

    class Stuck:
        def live(self) -> str | None:
            return "the event loop has made no progress for 6.0 s"

        def ready(self) -> str | None:
            return None

    server = ProbeServer(Stuck(), int(port))
    try:
        assert not healthy()  # a 503 fails the check
    finally:
        server.close()


def deployments() -> list[dict[str, Any]]:
    found = []
    for block in blocks(GUIDE):
        if block.lang == "yaml":
            found += [doc for doc in yaml.safe_load_all(block.code) if doc["kind"] == "Deployment"]
    return found


def test_the_kubernetes_example_probes_what_the_worker_serves() -> None:
    (deployment,) = deployments()
    assert deployment["apiVersion"] == "apps/v1"
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    words = [str(word) for word in container["command"]]
    assert words[:2] == ["worqr", "worker"]
    args = build_parser().parse_args(words[1:])  # exits with 2 on a bad option
    assert args.health_host == "0.0.0.0"  # the kubelet probes the pod's address
    ports = {entry["name"]: entry["containerPort"] for entry in container["ports"]}
    paths = {}
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        get = container[kind]["httpGet"]
        assert ports.get(get["port"], get["port"]) == args.health_port, kind
        paths[kind] = get["path"]
    assert paths == {
        "startupProbe": "/readyz",
        "livenessProbe": "/livez",
        "readinessProbe": "/readyz",
    }
    # A liveness failure takes longer than --livez-after: one slow probe restarts nothing.
    live = container["livenessProbe"]
    livez_after = args.livez_after if args.livez_after is not None else 5.0
    assert live["periodSeconds"] * live["failureThreshold"] > livez_after
    assert spec["terminationGracePeriodSeconds"] > args.grace  # the drain fits
