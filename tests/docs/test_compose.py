"""docker-compose.yml without a Docker engine: it is valid Compose (against the
specification's JSON schema, and to a real Compose implementation: Debian's
docker-compose, whose `config` needs no engine), every file it mounts exists,
every port Prometheus scrapes is one a service exposes and binds, and each
command parses."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

import worqr
from tests.support import ROOT, tools
from tests.support.waiting import wait_until
from worqr.cli import build_parser
from worqr.embedded import EmbeddedRedis

COMPOSE = ROOT / "docker-compose.yml"
SCHEMA = Path(__file__).resolve().parent / "fixtures" / "compose-spec.json"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = load(COMPOSE)
    return data


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = compose["services"]
    return result


def command(service: dict[str, Any]) -> list[str]:
    value = service["command"]
    assert isinstance(value, list), "commands are lists: no shell word splitting"
    return [str(word) for word in value]


def option(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def exposed(service: dict[str, Any]) -> set[int]:
    """Container ports a service exposes to the compose network."""
    ports = {int(str(p).split("/")[0]) for p in service.get("expose", [])}
    for entry in service.get("ports", []):
        ports.add(int(str(entry).split(":")[-1].split("/")[0]))
    return ports


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Bind mounts of a service: container path -> host path (relative to the repo)."""
    found = {}
    for volume in service.get("volumes", []):
        source, target, *_ = str(volume).split(":")
        if source.startswith((".", "/")):
            found[target] = source
    return found


def test_compose_file_is_valid_against_the_specification(
    compose: dict[str, Any], validator: jsonschema.protocols.Validator
) -> None:
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


def compose_config(path: Path) -> subprocess.CompletedProcess[str]:
    """``docker-compose -f PATH config -q``: parses, validates and resolves the
    file (anchors, relative paths) as ``up`` would, without an engine."""
    program = tools.find("docker-compose")
    assert program is not None
    return subprocess.run(
        [program, "-f", str(path), "config", "-q"],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.needs("docker-compose")
def test_a_real_compose_implementation_accepts_the_file(tmp_path: Path) -> None:
    done = compose_config(COMPOSE)
    assert done.returncode == 0, done.stderr
    # ... and it really checks: the same file with a misspelt service key fails.
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE.read_text().replace("    command:", "    comand:", 1))
    refused = compose_config(broken)
    assert refused.returncode != 0 and "'comand'" in refused.stderr, refused.stderr


@pytest.mark.parametrize(
    "breakage",
    [
        lambda c: c["services"]["worker"].update(restart=["always"]),
        lambda c: c["services"]["worker"].update(comand=["worqr"]),
        lambda c: c["services"]["redis"].update(ports="6379"),
        lambda c: c.update(servics={}),
    ],
    ids=["wrong-type", "misspelt-key", "ports-not-a-list", "misspelt-top-level"],
)
def test_the_schema_really_checks(
    compose: dict[str, Any], validator: jsonschema.protocols.Validator, breakage: Any
) -> None:
    broken = json.loads(json.dumps(compose))
    breakage(broken)
    assert list(validator.iter_errors(broken))


def test_every_mounted_file_and_the_build_context_exist(compose: dict[str, Any]) -> None:
    for name, service in services(compose).items():
        for source in mounts(service).values():
            assert (ROOT / source).exists(), f"{name} mounts missing {source}"
    builds = [s["build"] for s in services(compose).values() if "build" in s]
    assert builds
    for build in builds:
        context = ROOT / (build if isinstance(build, str) else build.get("context", "."))
        assert (context / "Dockerfile").is_file()
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", dockerfile, re.M)
    assert "pip install ." in dockerfile
    for copied in re.findall(r"^COPY (.+) \S+$", dockerfile, re.M):
        for source in copied.split():
            assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"


def test_redis_keeps_an_append_only_file(compose: dict[str, Any]) -> None:
    words = command(services(compose)["redis"])
    assert option(words, "--appendonly") == "yes"
    url = urlsplit(services(compose)["worker"]["environment"]["WORQR_REDIS_URL"])
    assert url.hostname == "redis" and url.port in exposed(services(compose)["redis"]) | {6379}


def test_workers_scale(compose: dict[str, Any]) -> None:
    worker = services(compose)["worker"]
    # A fixed name or a published host port would make a second replica fail.
    assert "container_name" not in worker
    assert "ports" not in worker
    assert worker.get("deploy", {}).get("replicas", 1) >= 1


def scrape_targets(config: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(job, service, port) of every Prometheus target."""
    targets = []
    for job in config["scrape_configs"]:
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                host, port = target.rsplit(":", 1)
                targets.append((job["job_name"], host, int(port)))
        for dns in job.get("dns_sd_configs", []):
            assert dns.get("type", "SRV") == "A", "compose DNS answers A records"
            targets += [(job["job_name"], name, int(dns["port"])) for name in dns["names"]]
    return targets


def bound_port(words: list[str]) -> tuple[int, str] | None:
    """The port and address a worqr command serves metrics on."""
    for port_option, host_option in (("--metrics-port", "--metrics-host"), ("--port", "--host")):
        port = option(words, port_option)
        if port is not None:
            return int(port), option(words, host_option) or "127.0.0.1"
    return None


def test_every_scraped_port_is_exposed_and_bound(compose: dict[str, Any]) -> None:
    prometheus = services(compose)["prometheus"]
    (flag,) = [w for w in command(prometheus) if w.startswith("--config.file=")]
    config_file = mounts(prometheus)[flag.split("=", 1)[1]]
    config = load(ROOT / config_file)
    targets = scrape_targets(config)
    assert {service for _, service, _ in targets} >= {"worker", "exporter"}
    for job, name, port in targets:
        assert name in services(compose), f"{job} scrapes unknown service {name}"
        service = services(compose)[name]
        assert port in exposed(service), f"{job}: {name} does not expose {port}"
        bound = bound_port(command(service))
        assert bound is not None, f"{name} serves no metrics"
        # Reachable from the Prometheus container: not loopback.
        assert bound == (port, "0.0.0.0"), f"{job}: {name} binds {bound}, scraped on {port}"


def test_grafana_is_provisioned_with_this_prometheus_and_dashboard(
    compose: dict[str, Any],
) -> None:
    grafana = services(compose)["grafana"]
    mounted = mounts(grafana)
    provisioning = ROOT / mounted["/etc/grafana/provisioning"]
    (source,) = load(provisioning / "datasources" / "prometheus.yml")["datasources"]
    url = urlsplit(source["url"])
    assert url.hostname == "prometheus"
    assert url.port in exposed(services(compose)["prometheus"])
    (provider,) = load(provisioning / "dashboards" / "worqr.yml")["providers"]
    dashboards = provider["options"]["path"]
    assert (ROOT / mounted[dashboards] / "worqr.json").is_file()
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{dashboards}/worqr.json"


def test_every_command_parses_and_the_worker_target_is_a_worker(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))  # the image's PYTHONPATH
    assert "PYTHONPATH=/app" in (ROOT / "Dockerfile").read_text()
    parser = build_parser()
    checked = 0
    for name, service in services(compose).items():
        if "build" not in service:
            continue
        words = command(service)
        if words[0] == "worqr":
            parser.parse_args(words[1:])  # exits with 2 on an unknown command or option
        else:
            assert words[:2] == ["python", "-m"], f"{name}: {words}"
            importlib.import_module(words[2]).build_parser().parse_args(words[3:])
        target = next((w for w in words if re.fullmatch(r"[\w.]+:\w+", w)), None)
        if target is not None:  # a worker's MODULE:ATTR
            module, attr = target.split(":")
            assert isinstance(getattr(importlib.import_module(module), attr), worqr.Worker)
        checked += 1
    assert checked >= 3


@pytest.mark.slow
def test_the_compose_app_produces_and_works(
    make_redis: Callable[..., EmbeddedRedis], monkeypatch: pytest.MonkeyPatch
) -> None:
    """deploy/app.py (what the worker and producer services run) does its job:
    every task it enqueues ends finished, failed or cancelled."""
    monkeypatch.syspath_prepend(str(ROOT))
    app = importlib.import_module("deploy.app")
    server = make_redis()
    assert app.main(["produce", "--url", server.url, "--rate", "2000", "--count", "60"]) == 0
    app.worker.configure(url=server.url, grace_period=0.0)
    thread = threading.Thread(target=app.worker.run)
    thread.start()
    try:
        with worqr.Worqr(server.url) as client:

            def accounted() -> int:
                total = 0
                for queue in app.QUEUES:
                    stats = client.get_stats(queue)
                    total += sum(stats.get(k, 0) for k in ("finished", "failed", "cancelled"))
                return total

            wait_until(lambda: accounted() == 60, timeout=30, interval=0.1)
            enqueued = sum(client.get_stats(q).get("enqueued", 0) for q in app.QUEUES)
            assert enqueued == 60
            assert sum(client.count_failed(q) for q in app.QUEUES) >= 1  # some always fail
    finally:
        app.worker.stop(now=True)
        thread.join(timeout=15)
