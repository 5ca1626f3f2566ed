"""The HTTP API page's examples run (docs/http.md, once the README's "HTTP API"
section): every curl line is parsed and replayed with httpx exactly (method,
URL, headers, body) against the app, with a worker running the page's "emails"
handler, and every reply the page shows as JSON is the reply the server gives.
curl itself is not needed."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

import httpx

import worqr
from tests.http.conftest import TOKEN, Api, ApiRunner, send_email
from tests.support import ROOT
from tests.support.workers import Runner, worker_settings
from worqr.cli import build_parser
from worqr.http import create_app
from worqr.http.security import LOOPBACK_HOSTS

PAGE = ROOT / "docs" / "http.md"
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)


@dataclass
class Curl:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    shown: str | None = None  # the reply the page shows after it (a "# ..." line)


def parse_curl(line: str) -> Curl:
    """The request curl would send for ``line`` (only the options the page
    uses; another one fails the test rather than being replayed wrong)."""
    words = shlex.split(line.replace("$(cat token.txt)", TOKEN))
    assert words[0] == "curl"
    request = Curl("GET", "")
    rest = iter(words[1:])
    for word in rest:
        if word in ("-s", "-N"):
            continue
        if word == "-X":
            request.method = next(rest)
        elif word == "-H":
            name, _, value = next(rest).partition(":")
            request.headers[name.strip()] = value.strip()
        elif word == "-d":
            request.body = next(rest).encode()
            if request.method == "GET":
                request.method = "POST"  # curl -d posts, as a form unless told
            request.headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        else:
            assert not word.startswith("-"), f"the replay does not know curl's {word}"
            request.url = word
    return request


def page_commands() -> tuple[list[Curl], list[str]]:
    (block,) = SH_BLOCK.findall(PAGE.read_text("utf-8"))
    curls: list[Curl] = []
    worqr_lines: list[str] = []
    for line in block.splitlines():
        if line.startswith("curl "):
            curls.append(parse_curl(line))
        elif line.startswith("# ") and curls and curls[-1].shown is None:
            curls[-1].shown = line[2:]
        elif line.startswith("worqr "):
            worqr_lines.append(line.split("#")[0])
    return curls, worqr_lines


def test_the_pages_commands_parse() -> None:
    curls, commands = page_commands()
    assert len(curls) >= 5 and {c.method for c in curls} >= {"GET", "POST"}
    for command in commands:
        args = build_parser().parse_args(shlex.split(command)[1:])
        assert args.command == "http"


def test_the_pages_curl_examples_answer_what_the_page_shows(
    api: ApiRunner, redis_url: str, prefix: str
) -> None:
    curls, _ = page_commands()
    page_worker = worqr.Worker(redis_url, settings=worker_settings(prefix))
    page_worker.job("emails", retries=0)(send_email)  # the page's one queue
    runner = Runner()
    runner.start(page_worker)

    async def scenario(api: Api) -> None:
        with_token = create_app(
            api.client, token=TOKEN, show_payloads=False, trusted_hosts=LOOPBACK_HOSTS
        )
        for curl in curls:
            app = with_token if "Authorization" in curl.headers else api.app
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
                answer = await http.request(
                    curl.method, curl.url, headers=curl.headers, content=curl.body
                )
            assert answer.status_code < 300, (curl, answer.text)
            if curl.shown is not None and "..." not in curl.shown:
                assert answer.json() == json.loads(curl.shown), curl

    try:
        api(scenario)
    finally:
        runner.stop_all()
