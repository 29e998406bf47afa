"""Schemathesis against the gateway's own OpenAPI document (`GET /openapi.json`).

Every GET operation (member credentials) and `POST /api/memory/documents` (admin credentials) gets
generated requests — valid ones and, separately, invalid ones — with `X-Scope-Slug` fixed to a real
organization. Checks: no 5xx; the status code, content type, headers and body conform to the document;
invalid input is rejected with a 4xx; and every error is an RFC 9457 problem document (the document
declares `application/problem+json` without a schema, so that part is checked here by hand).

How it runs: Schemathesis calls the API with `requests`, which blocks, while the gateway runs on this
test's event loop; so the generated tests run in a worker thread (`asyncio.to_thread`) and the loop
stays free to serve them. They use a second gateway with roomy rate limits (`tests/gateways.py`):
the defaults (60 at once per token) would turn most of the few hundred requests into 429s.
"""

import asyncio
import functools
import os
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis import Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cortex_cli.api_keys import create_key
from cortex_store.models import MemberRole
from tests.conftest import Org
from tests.gateways import ROOMY_LIMITS, running_gateway
from tests.infrastructure import Infrastructure
from tests.org_clients import close_org, create_org
from tests.services import RunningServices

pytestmark = [
    pytest.mark.e2e,
    # Schemathesis' own strategies use `random` inside; Hypothesis warns about it. Not ours to fix.
    pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning"),
]

MAX_EXAMPLES = 30
# The same inputs on every run, so a CI failure is one someone can reproduce and not a draw of luck;
# `CORTEX_FUZZ_SEED=<n>` explores other inputs (a seed that finds something reproduces it).
FUZZ_SEED = os.environ.get("CORTEX_FUZZ_SEED")
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
WRITES = {("POST", "/api/memory/documents")}


@dataclass
class Findings:
    statuses: dict[str, set[int]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Target:
    base_url: str
    org: Org
    document: dict[str, Any]


@pytest.fixture(scope="module")
async def target(migrated: Infrastructure, services: RunningServices) -> AsyncIterator[Target]:
    async with running_gateway(migrated, **ROOMY_LIMITS) as base_url:
        org = await create_org(migrated.database_url, base_url, services.secret, prefix="schema")
        try:
            # Something to find, so that item detail and the feed answer 200 as well as 404.
            note = await org.admin.post(
                "/api/memory/documents", params={"wait": "true"}, json={"title": "Seed note", "tags": ["seed"]}
            )
            assert note.status_code == 201, note.text
            response = await org.member.get("/openapi.json")
            assert response.status_code == 200, response.text
            yield Target(base_url, org, response.json())
        finally:
            await close_org(org)


def _assert_problem(response: schemathesis.Response) -> None:
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.split(";")[0] == "application/problem+json", (response.status_code, response.content[:500])
    body = response.json()
    assert body["status"] == response.status_code, body
    for name in ("type", "title", "detail"):
        assert isinstance(body[name], str), body


def _sent_query_keys(failure: str) -> set[str]:
    """The query parameter names of the request as sent (from the reproduction command)."""
    match = re.search(r"curl .*'(http[^']+)'", failure)
    return set(parse_qs(urlsplit(match.group(1)).query, keep_blank_values=True)) if match else {"?"}


def _sent_query_values(failure: str, name: str) -> list[str] | None:
    """The values of query parameter `name` as sent; None when the reproduction command is not found."""
    match = re.search(r"curl .*'(http[^']+)'", failure)
    return parse_qs(urlsplit(match.group(1)).query, keep_blank_values=True).get(name, []) if match else None


def _sent_values_are_valid(reason: str, failure: str, schemas: dict[str, Any]) -> bool:
    """A claimed violation by a query parameter whose values, as sent, satisfy its schema: the invalid
    value was lost on the way to a query string (a type that serializes to a valid string, `[false]`
    sent as `q=false`; or a null, which leaves the parameter out altogether)."""
    match = re.search(r"- query: violates `\w+` at /properties/(\w+)", reason)
    if match is None or match.group(1) not in schemas:
        return False
    sent = _sent_query_values(failure, match.group(1))
    return sent is not None and all(_valid(value, schemas[match.group(1)]) for value in sent)


CHECKED_KEYWORDS = {"type", "minLength", "maxLength", "pattern", "title"}


def _valid(value: str, schema: dict[str, Any]) -> bool:
    """Whether a string satisfies one of the schema's plain string options (anything else: not judged)."""
    return any(
        set(option) <= CHECKED_KEYWORDS
        and option.get("type") == "string"
        and option.get("minLength", 0) <= len(value) <= option.get("maxLength", len(value))
        and ("pattern" not in option or re.search(option["pattern"], value) is not None)
        for option in schema.get("anyOf", [schema])
    )


def _claimed_violation_not_sent(reason: str, failure: str, known: set[str], schemas: dict[str, Any]) -> bool:
    """Mutations Schemathesis reports as invalid that never reach the server as invalid data."""
    if _sent_values_are_valid(reason, failure, schemas):
        return True
    if reason.startswith("- header:"):
        return "Authorization" in reason  # the test sends its own valid credentials over any mutation
    if "(was array, became" in reason or "became object)" in reason:
        return True  # a query string carries `?type=x` as a one-element array, and any value as a string
    if "additionalProperties" in reason and _sent_query_keys(failure) <= known:
        return "required" not in reason or ("(was q)" in reason and "q" in _sent_query_keys(failure))
    return False


def _only_false_positives(failure: str, known: set[str], schemas: dict[str, Any]) -> bool:
    """Schemathesis' false positives here: a "schema-violating request accepted" whose every claimed
    violation is one that was not sent (see above), so a 2xx is right."""
    reasons = [line.strip() for line in failure.splitlines() if line.strip().startswith(("- query:", "- header:"))]
    return (
        "Schema-violating request accepted" in failure
        and bool(reasons)
        and all(_claimed_violation_not_sent(reason, failure, known, schemas) for reason in reasons)
    )


def _run(
    operation: Any,
    mode: GenerationMode,
    base_url: str,
    headers: dict[str, str],
    fixed: dict[str, str],
    findings: Findings,
) -> None:
    """Generated requests for one operation in one mode (runs in a worker thread)."""
    label = f"{operation.method.upper()} {operation.path} [{mode.value}]"
    query = [p for p in operation.iter_parameters() if getattr(p.location, "value", p.location) == "query"]
    known = {p.name for p in query}
    schemas = {p.name: p.definition["schema"] for p in query if "schema" in p.definition}
    session = requests.Session()

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        derandomize=FUZZ_SEED is None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seed(int(FUZZ_SEED) if FUZZ_SEED else None)
    @given(case=operation.as_strategy(generation_mode=mode, headers=fixed))
    def check(case: Case[Any]) -> None:
        response = case.call(base_url=base_url, session=session, headers=headers, timeout=30)
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except (Exception, FailureGroup) as exc:
            if not _only_false_positives(str(exc), known, schemas):
                raise
        findings.statuses.setdefault(label, set()).add(response.status_code)
        if response.status_code >= 400:
            _assert_problem(response)

    try:
        check()
    except (Exception, FailureGroup) as exc:  # noqa: BLE001 — collected, so that every operation is tried
        findings.failures.append(f"{label}:\n{exc}")
    finally:
        session.close()


async def test_the_gateway_conforms_to_its_openapi_document(target: Target, migrated: Infrastructure) -> None:
    org = target.org
    _, admin_key = await create_key(migrated.database_url, org.id, "schemathesis", MemberRole.ADMIN)
    member = {"Authorization": str(org.member.headers["Authorization"])}
    admin = {"Authorization": f"Bearer {admin_key}"}
    schema = schemathesis.openapi.from_dict(target.document)

    operations = [
        result.ok()
        for result in schema.get_all_operations()
        if isinstance(result, Ok)
        and (result.ok().method.upper() == "GET" or (result.ok().method.upper(), result.ok().path) in WRITES)
    ]
    labels = {(op.method.upper(), op.path) for op in operations}
    assert {
        ("GET", "/api/memory"),
        ("GET", "/api/memory/facets"),
        ("GET", "/api/memory/stats"),
        ("GET", "/api/memory/documents/{document_id}"),
        ("POST", "/api/memory/documents"),
    } <= labels

    findings = Findings()
    jobs: list[functools.partial[None]] = []
    for operation in operations:
        write = (operation.method.upper(), operation.path) in WRITES
        headers = admin if write else member
        takes_scope = any(p.name == "X-Scope-Slug" for p in operation.headers)
        fixed = {"X-Scope-Slug": org.slug} if takes_scope else {}
        # Negative data needs something to make invalid besides the fixed scope header.
        has_inputs = len(operation.body) > 0 or any(p.name != "X-Scope-Slug" for p in operation.iter_parameters())
        modes = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE) if has_inputs else (GenerationMode.POSITIVE,)
        jobs += [functools.partial(_run, operation, mode, target.base_url, headers, fixed, findings) for mode in modes]

    async with asyncio.timeout(240):
        for job in jobs:
            await asyncio.to_thread(job)

    assert findings.failures == [], "\n\n".join(findings.failures)
    # The run exercised success and rejection, not only one of them.
    assert 200 in findings.statuses["GET /api/memory [positive]"]
    assert findings.statuses["GET /api/memory [negative]"] & {400, 422}
    assert findings.statuses["POST /api/memory/documents [positive]"] & {201, 202}
    assert 422 in findings.statuses["POST /api/memory/documents [negative]"]
    assert not any(status == 429 for statuses in findings.statuses.values() for status in statuses)


async def test_a_missing_scope_or_token_is_a_documented_problem(target: Target) -> None:
    """What the generated tests hold fixed: no scope, no token, a broken token."""
    token = str(target.org.member.headers["Authorization"])
    async with httpx.AsyncClient(base_url=target.base_url, timeout=30) as client:
        for headers, status in (
            ({"Authorization": token}, 400),
            ({"X-Scope-Slug": target.org.slug}, 401),
            ({"X-Scope-Slug": target.org.slug, "Authorization": "Bearer x.y.z"}, 401),
            ({"X-Scope-Slug": f"none-{uuid.uuid4().hex[:6]}", "Authorization": token}, 404),
        ):
            response = await client.get("/api/memory", headers=headers)
            assert response.status_code == status, response.text
            assert response.headers["content-type"].startswith("application/problem+json")
            assert str(status) in target.document["paths"]["/api/memory"]["get"]["responses"]


@pytest.mark.parametrize("value", ["", "x" * 201])
@pytest.mark.parametrize("path", ["/api/memory", "/api/memory/facets"])
async def test_filter_values_the_contract_refuses_are_422_not_500(target: Target, path: str, value: str) -> None:
    """What the generated tests found first, pinned down: filter values of 0 or over 200 characters."""
    for facet in ("type", "source", "status", "tag"):
        response = await target.org.member.get(path, params={facet: value})
        assert response.status_code == 422, (facet, response.status_code, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
