"""Fault scenario 12: security. A mesh that runs as a Redis ACL user restricted
to its prefix's keys and channels (no KEYS, CONFIG, FLUSH or DEBUG needed), over
TLS with certificate verification, failing closed with a wrong CA."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import redis

import worqr
from tests.support import tools
from tests.support.fault_harness import (
    QUEUE,
    Checker,
    Figures,
    meshes,
    new_mesh,
    read_log,
    seeded,
    worker_ids,
)
from tests.support.waiting import wait_until
from worqr.embedded import EmbeddedRedis, EmbeddedRedisError, free_port

pytestmark = [pytest.mark.fault, pytest.mark.slow]

PASSWORD = "pw-7Hq2-never-logged"
TIMING = ("--ttl", "3", "--heartbeat", "0.5", "--concurrency", "2")  # TLS starts slowly under load


def restricted_user(admin: redis.Redis, prefix: str) -> None:
    """User "app": only the prefix's keys and channels, nothing dangerous."""
    patterns = ["{" + prefix + "}*", "{" + prefix + ":*"]
    admin.acl_setuser(
        "app",
        enabled=True,
        reset_keys=True,
        reset_channels=True,
        passwords=[f"+{PASSWORD}"],
        keys=patterns,
        channels=patterns,
        commands=["+@all", "-@dangerous"],
    )


def as_user(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://app:{quote(PASSWORD)}@{rest}"


def exercise(url: str, server: EmbeddedRedis, prefix: str, tmp: Path, name: str) -> Figures:
    """Run a real mesh and the client API's key operations through ``url``."""
    seed, rng = seeded(name)
    log = tmp / "executions.jsonl"
    shorts = [f"t{i}" for i in range(200)]
    holds = ["h0", "h1"]
    with (
        redis.Redis.from_url(server.url) as admin,
        meshes(tmp, url, prefix) as made,
        worqr.Worqr(url, prefix=prefix) as wq,
    ):
        checker = Checker(admin, prefix)
        mesh = new_mesh(made, tmp, url, prefix).start(2, *TIMING)
        wait_until(lambda: len(wq.get_workers()) == 2, timeout=30)
        wq.enqueue_many(QUEUE, [f"{t}:{rng.randint(0, 5)}" for t in shorts])
        wq.enqueue_many(QUEUE, [f"{h}:hold" for h in holds])

        def holders() -> dict[str, int]:
            starts = [e for e in read_log(log) if e["e"] == "start" and e["t"] in holds]
            return {e["t"]: e["os"] for e in starts}

        held = wait_until(lambda: len(holders()) == 2 and holders(), timeout=20)
        victim = held["h0"]
        os.kill(victim, signal.SIGKILL)  # its peer reaps it, as the restricted user
        wait_until(lambda: len([e for e in read_log(log) if e.get("t") == "h0"]) >= 2, timeout=20)
        for hold in holds:
            assert wq.cancel_tasks(QUEUE, f"{hold}:hold") == 1
        gone = worker_ids(read_log(log), [victim])
        checker.wait_quiescent(timeout=30, gone=gone)

        # The rest of the client API, as the same user.
        wq.start_worker()
        wq.enqueue("side", b"\x00poison")
        process = wq.dequeue("side")
        assert process is not None and wq.fail_process(process)
        assert wq.get_failed("side") == ["\x00poison"] and wq.count_failed("side") == 1
        assert wq.requeue_failed("side") == 1
        process = wq.dequeue("side")
        assert process is not None and wq.stop_process(process)
        assert wq.heartbeat() in ("ok", "reaped") and wq.reap() == 0
        assert wq.get_worker_info(wq.worker_id or "")["pid"] == str(os.getpid())
        assert all(wq.workers_alive(wq.get_workers()))
        assert wq.get_stats(QUEUE)["cancelled"] == 2
        wq.delete_queue("side")
        wq.stop_work("side")
        wait_until(lambda: len(wq.get_workers()) == 3)
        assert mesh.stop() == 0
        output = mesh.text()
        assert "NOPERM" not in output and "Traceback" not in output
        assert PASSWORD not in output and PASSWORD not in repr(wq)

    figures = Figures(name, seed, "1 x SIGKILL, 2 cancels", len(shorts) + len(holds))
    with redis.Redis.from_url(server.url) as admin:
        checker = Checker(admin, prefix)
        checker.verify(figures, read_log(log), shorts + holds, holds, killed_pids=[victim])
        assert checker.orphans() == []
    return figures


def test_a_mesh_runs_as_a_prefix_restricted_acl_user(
    make_redis: Callable[..., EmbeddedRedis], tmp_path: Path
) -> None:
    server = make_redis()
    prefix = f"f{uuid.uuid4().hex[:10]}"
    with redis.Redis.from_url(server.url) as admin:
        restricted_user(admin, prefix)
        admin.set("outside", "x")
    url = as_user(server.url)
    figures = exercise(url, server, prefix, tmp_path, "acl-user")

    # The restriction is real: everything above ran without these.
    with redis.Redis.from_url(url) as user:
        for command in (("GET", "outside"), ("KEYS", "*"), ("CONFIG", "GET", "*")):
            with pytest.raises(redis.exceptions.NoPermissionError):
                user.execute_command(*command)
        for command in (("FLUSHALL",), ("DEBUG", "SLEEP", "0")):
            with pytest.raises(redis.exceptions.NoPermissionError):
                user.execute_command(*command)
    another = worqr.Worqr(url, prefix="another")  # another mesh's keys: refused
    with another, pytest.raises(redis.exceptions.NoPermissionError):
        another.enqueue("q", "x")
    figures.report()


def certificates(directory: Path, name: str) -> dict[str, Path]:
    """A CA and a server certificate for 127.0.0.1, made with the openssl CLI."""
    openssl = tools.find("openssl")
    if openssl is None:
        tools.require("openssl", "it makes the test certificates")
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    paths = {k: directory / f"{name}-{k}" for k in ("ca.pem", "ca.key", "key", "csr", "pem")}

    def run(*args: str | Path) -> None:
        subprocess.run([openssl, *map(str, args)], check=True, capture_output=True, timeout=30)

    run("req", "-x509", *key, "-keyout", paths["ca.key"], "-out", paths["ca.pem"], "-days", "2",
        "-subj", f"/CN={name} test CA")  # fmt: skip
    run("req", *key, "-keyout", paths["key"], "-out", paths["csr"], "-subj", "/CN=localhost")
    extensions = directory / f"{name}-ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("x509", "-req", "-in", paths["csr"], "-CA", paths["ca.pem"], "-CAkey", paths["ca.key"],
        "-CAcreateserial", "-out", paths["pem"], "-days", "2", "-extfile", extensions)  # fmt: skip
    return paths


def tls_server(make_redis: Callable[..., EmbeddedRedis], certs: dict[str, Path]) -> Any:
    port = free_port()
    args = ["--tls-port", str(port), "--tls-cert-file", str(certs["pem"])]
    args += ["--tls-key-file", str(certs["key"]), "--tls-ca-cert-file", str(certs["ca.pem"])]
    args += ["--tls-auth-clients", "no"]
    try:
        return make_redis(extra_args=args), port
    except EmbeddedRedisError as error:
        if "tls" in str(error).lower():
            tools.require("redis-server with TLS", str(error).splitlines()[0])
        raise


def test_a_mesh_over_tls_verifies_the_server_and_fails_closed(
    make_redis: Callable[..., EmbeddedRedis], tmp_path: Path
) -> None:
    certs = certificates(tmp_path, "good")
    wrong = certificates(tmp_path, "wrong")
    server, tls_port = tls_server(make_redis, certs)
    prefix = f"f{uuid.uuid4().hex[:10]}"
    with redis.Redis.from_url(server.url) as admin:
        restricted_user(admin, prefix)
    base = f"rediss://127.0.0.1:{tls_port}/0?ssl_cert_reqs=required&ssl_ca_certs="
    url = as_user(base + str(certs["ca.pem"]))
    figures = exercise(url, server, prefix, tmp_path, "tls-acl")

    # Fail closed: a wrong CA, the system's CAs, or plain TCP on the TLS port.
    quick = worqr.Settings(prefix=prefix, retry_deadline=0.5, socket_timeout=2)
    refused = [
        as_user(base + str(wrong["ca.pem"])),
        as_user(f"rediss://127.0.0.1:{tls_port}/0?ssl_cert_reqs=required"),
        as_user(f"redis://127.0.0.1:{tls_port}/0"),
    ]
    for bad in refused:
        with worqr.Worqr(bad, settings=quick) as wq:
            with pytest.raises(worqr.RedisUnavailableError) as caught:
                wq.enqueue(QUEUE, "never")
            assert PASSWORD not in str(caught.value)
    with redis.Redis.from_url(server.url) as admin:
        assert Checker(admin, prefix).stats()["enqueued"] == figures.tasks  # nothing got in
    figures.report()
