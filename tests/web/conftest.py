"""Fixtures of the web view's tests: a mesh with traffic (workers in threads,
jobs that finish, fail and wait, tasks that are dead-lettered) and the view
served to httpx (in process) or to a browser (uvicorn on a loopback port)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import worqr
from tests.support.timing import QUIET
from tests.support.waiting import wait_until
from tests.support.workers import Runner, worker_settings
from worqr.web.serve import WebServer

TOKEN = "s3cret-token"
EMAILS, TASKS, IMPORTS, TICKS = "emails", "tasks", "imports", "ticks"
FAILING_EMAILS, DELAYED_EMAILS, BAD_TASKS = 3, 5, 2


def mesh_worker(redis_url: str, prefix: str) -> worqr.Worker:
    """The mesh's worker: jobs on EMAILS (``fail...`` fails for good), tasks
    on TASKS (``bad...`` raises: a dead letter)."""
    worker = worqr.Worker(redis_url, settings=worker_settings(prefix, concurrency=4))

    @worker.job(EMAILS, retries=0)
    def send(payload: str) -> str:
        if payload.startswith("fail"):
            raise worqr.Fail("mailbox <b>full</b>")  # markup in an error must show as text
        return f"sent {payload}"

    @worker.handler(TASKS)
    def task(payload: str) -> None:
        if payload.startswith("bad"):
            raise RuntimeError("a bad task")

    @worker.job(TICKS)
    def tick(payload: str) -> None:
        return None

    return worker


def importer(redis_url: str, prefix: str) -> worqr.Worker:
    """A worker whose every IMPORTS job fails; the tests stop it once they
    failed, so a retried one stays queued for the test to see."""
    worker = worqr.Worker(redis_url, settings=worker_settings(prefix))

    @worker.job(IMPORTS, retries=0)
    def load(payload: str) -> None:
        raise worqr.Fail(f"cannot import {payload}")

    return worker


class Mesh:
    """The test's mesh after its traffic: what each queue must show."""

    def __init__(self, client: worqr.Worqr, worker: worqr.Worker) -> None:
        self.client = client
        self.worker = worker
        self.failed_import = ""


@pytest.fixture
def mesh(redis_url: str, prefix: str, runner: Runner) -> Iterator[Mesh]:
    """Workers in threads, and traffic that has settled: EMAILS has finished,
    failed and delayed jobs, TASKS dead letters, IMPORTS failed jobs and no
    worker any more; the EMAILS/TASKS worker keeps running."""
    settings = worqr.Settings(prefix=prefix, **QUIET)
    with worqr.Worqr(redis_url, settings=settings) as client:
        worker = runner.start(mesh_worker(redis_url, prefix))
        emails = [f"fail-{i}" for i in range(FAILING_EMAILS)] + [f"ok-{i}" for i in range(12)]
        client.submit_many(EMAILS, emails)
        client.submit_many(EMAILS, [f"later-{i}" for i in range(DELAYED_EMAILS)], delay=3600)
        client.enqueue_many(TASKS, [f"bad-{i}" for i in range(BAD_TASKS)] + ["good-1", "good-2"])
        wait_until(
            lambda: (
                client.count_jobs(EMAILS)["failed"] == FAILING_EMAILS
                and client.count_jobs(EMAILS)["finished"] == 12
                and client.count_failed(TASKS) == BAD_TASKS
                and client.count_tasks(TASKS) == 0
            ),
            timeout=20,
            message="the traffic settles",
        )
        loader = runner.start(importer(redis_url, prefix))
        ref = client.submit(IMPORTS, "customers.csv", id="import-customers")
        wait_until(lambda: client.count_jobs(IMPORTS)["failed"] == 1, timeout=20)
        runner.stop(loader)
        made = Mesh(client, worker)
        made.failed_import = ref.id
        yield made


def serve(redis_url: str, prefix: str, token: str | None) -> Iterator[WebServer]:
    settings = worqr.Settings(prefix=prefix, **QUIET)
    server = WebServer(lambda: worqr.AsyncWorqr(redis_url, settings=settings), token=token)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def served(redis_url: str, prefix: str) -> Iterator[WebServer]:
    """The standalone view with TOKEN on a free loopback port (uvicorn on a
    thread): the page asks for the token before it shows anything."""
    yield from serve(redis_url, prefix, TOKEN)


@pytest.fixture
def served_open(redis_url: str, prefix: str) -> Iterator[WebServer]:
    """The standalone view without a token: read-only, reads open."""
    yield from serve(redis_url, prefix, None)


@pytest.fixture
def trickle(redis_url: str, prefix: str, mesh: Mesh) -> Iterator[None]:
    """Steady traffic on TICKS (a job every 50 ms, from a client of its own),
    so the page has rates to show."""
    stop = threading.Event()

    def submit() -> None:
        with worqr.Worqr(redis_url, settings=worqr.Settings(prefix=prefix, **QUIET)) as client:
            while not stop.wait(0.05):
                client.submit(TICKS, "tick")

    thread = threading.Thread(target=submit, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(5)
