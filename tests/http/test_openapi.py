"""The OpenAPI document and the routes come from the same operations, and the
document states what the server enforces: every path's methods (a 405 lists
them all), security only with a token, links for a job's life, and name and
id patterns that agree with the library's own checks."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from tests.http.conftest import TOKEN, Api, ApiRunner
from worqr import validate_name
from worqr._jobs import validate_job_id
from worqr._keys import MeshKeys
from worqr.http.app import OPERATIONS
from worqr.http.openapi import LINKED, document
from worqr.http.rules import JOB_ID_PATTERN, NAME_PATTERN

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_the_document_names_exactly_the_apps_routes_and_methods(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        served = {
            (method, route.path)
            for route in api.app.routes
            if route.path.startswith("/v1/")
            for method in route.methods - {"HEAD"}
        }
        answer = await api.http.get("/openapi.json")  # public: it holds no data
        assert answer.status_code == 200 and answer.json()["openapi"] == "3.1.0"
        written = {
            (method.upper(), path)
            for path, operations in answer.json()["paths"].items()
            for method in operations
        }
        assert served == written and len(written) == len(OPERATIONS)

    api(scenario, token=TOKEN)


def test_security_is_declared_only_when_the_server_has_a_token(api: ApiRunner) -> None:
    async def scenario(api: Api) -> dict[str, Any]:
        return dict((await api.http.get("/openapi.json")).json())

    documents: list[dict[str, Any]] = []

    async def keep(api: Api) -> None:
        documents.append(await scenario(api))

    api(keep, token=TOKEN)
    api(keep)
    with_token, without = documents
    assert with_token["security"] == [{"bearer": []}]
    assert with_token["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert "security" not in without and "securitySchemes" not in without["components"]
    for path, item in with_token["paths"].items():
        for method, operation in item.items():
            assert "401" in operation["responses"], (method, path)
    for item in without["paths"].values():
        assert all("401" not in operation["responses"] for operation in item.values())


def test_a_submitted_job_links_to_every_operation_on_it() -> None:
    doc = document(OPERATIONS, token=False)
    ids = {op["operationId"] for item in doc["paths"].values() for op in item.values()}
    submit = doc["paths"]["/v1/queues/{queue}/jobs"]["post"]
    for status in ("200", "201"):
        links = submit["responses"][status]["links"]
        assert set(links) == set(LINKED) and set(LINKED) <= ids
        for link in links.values():
            assert link["parameters"] == {
                "queue": "$request.path.queue",
                "id": "$response.body#/id",
            }


def test_every_schema_of_the_document_is_valid_json_schema() -> None:
    doc = document(OPERATIONS, token=True)
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    for item in doc["paths"].values():
        for operation in item.values():
            for parameter in operation["parameters"]:
                Draft202012Validator.check_schema(parameter["schema"])


def test_no_schema_offers_a_default_its_field_refuses() -> None:
    """A field left out rather than set to null has no ``default: null``."""
    text = str(document(OPERATIONS, token=False))
    for match in re.finditer(r"'default': None", text):
        context = text[max(0, match.start() - 300) : match.end()]
        assert "'null'" in context, context


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(path)) + "$")


def test_a_405_names_every_method_its_path_has(api: ApiRunner) -> None:
    by_path: dict[str, set[str]] = {}
    for operation in OPERATIONS:
        by_path.setdefault(operation.path, set()).add(operation.method)

    def served(url: str) -> set[str]:
        """The methods of every path ``url`` matches (``.../jobs/cancel`` is
        also the job named "cancel")."""
        return {m for path, ms in by_path.items() if _pattern(path).match(url) for m in ms}

    async def scenario(api: Api) -> None:
        for path, methods in by_path.items():
            url = path.replace("{queue}", "q").replace("{id}", "j")
            for method in {"GET", "POST", "PUT", "PATCH", "DELETE"} - served(url):
                answer = await api.http.request(method, url, headers=AUTH)
                assert answer.status_code == 405, (method, url, answer.text)
                allowed = {m.strip() for m in answer.headers["allow"].split(",")} - {"HEAD"}
                assert allowed == methods, (method, url, answer.headers["allow"])
                assert answer.json()["error"]["code"] == "method_not_allowed"

    api(scenario, token=TOKEN)


# Lone surrogates are left out: no URL and no I-JSON body can carry one (the
# body's parser refuses them: tests/http/test_jobs.py), and the library refuses
# them too (tests/client/test_input.py).
UNICODE = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=300)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(name=UNICODE)
def test_the_documented_name_rule_is_the_librarys(name: str) -> None:
    documented = re.fullmatch(NAME_PATTERN, name) is not None and len(name) <= 256
    try:
        validate_name(name)
        accepted = True
    except ValueError:
        accepted = False
    assert documented == accepted, repr(name)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(id=UNICODE)
def test_the_documented_id_rule_is_the_librarys(id: str) -> None:
    documented = re.fullmatch(JOB_ID_PATTERN, id) is not None and len(id) <= 256
    try:
        validate_job_id(id)
        accepted = True
    except ValueError:
        accepted = False
    assert documented == accepted, repr(id)


def test_a_bad_cursor_is_a_400_for_every_state_not_an_outage(api: ApiRunner) -> None:
    async def scenario(api: Api) -> None:
        await api.client.submit("q", "x")
        for state in ("delayed", "queued", "active", "retrying", "finished", "failed"):
            for cursor in ("abc", "-1", "1" * 20, "1.5"):
                url = f"/v1/queues/q/jobs?state={state}&cursor={cursor}"
                answer = await api.http.get(url)
                assert answer.status_code == 400, (url, answer.text)
                assert answer.json()["error"]["code"] == "invalid_parameter"
            far = await api.http.get(f"/v1/queues/q/jobs?state={state}&cursor={'9' * 19}")
            assert far.status_code == 200, far.text

    api(scenario)


def test_an_error_reply_about_a_command_is_no_outage(
    api: ApiRunner, redis_client: redis.Redis, prefix: str, keys: Callable[[], list[bytes]]
) -> None:
    """A key of the wrong type (another program wrote it) makes Redis answer
    WRONGTYPE: an internal error, not 503 redis_unavailable."""
    redis_client.set(MeshKeys(prefix).queue("clash").jobs, "not a hash")

    async def scenario(api: Api) -> None:
        answer = await api.http.get("/v1/queues/clash/jobs/some-id")
        assert answer.status_code == 500, answer.text
        assert answer.json()["error"]["code"] == "internal_error"

    api(scenario)


def test_numbers_past_what_redis_holds_are_400_on_every_route(
    api: ApiRunner, keys: Callable[[], list[bytes]]
) -> None:
    huge = [1e308, 10**30, -1]
    requests: list[tuple[str, str, Any]] = []
    for value in huge:
        for option in ("delay", "at", "timeout", "result_ttl", "backoff"):
            requests.append(("POST", "/v1/queues/q/jobs", {"payload": "x", option: value}))
        requests.append(("PUT", "/v1/queues/q/limits", {"rate": {"starts": 1, "seconds": value}}))
        requests.append(("PUT", "/v1/queues/q/limits", {"max_active": value}))
        requests.append(("GET", f"/v1/queues/q/jobs/j/result?wait={value}", None))
        requests.append(("GET", f"/v1/queues/q/jobs?state=queued&limit={value}", None))

    async def scenario(api: Api) -> None:
        for method, url, body in requests:
            answer = await api.http.request(method, url, json=body)
            assert answer.status_code == 400, (method, url, body, answer.text)
            assert answer.json()["error"]["code"] in ("invalid_option", "invalid_parameter")

    api(scenario)
    assert keys() == []
