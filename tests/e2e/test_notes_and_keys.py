"""Org notes (validation, Idempotency-Key), request limits (413, 429), API keys, and RS256 tokens via JWKS.

The RS256 and rate-limit tests run against a second in-process gateway (`tests/gateways.py`) that has a
JWKS URL and the default rate limits; it shares PostgreSQL, NATS and the aggregator with the session's.
"""

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from nats.js import JetStreamContext

from cortex_cli.api_keys import create_key, revoke_key
from cortex_cli.organizations import ensure_membership
from cortex_contracts import subjects
from cortex_gateway.idempotency import KEY_NAMESPACE
from cortex_gateway.settings import GatewaySettings
from cortex_gateway.tokens import issue_token
from cortex_store.models import MemberRole
from tests.conftest import Org, OrgFactory
from tests.gateways import running_gateway
from tests.infrastructure import Infrastructure
from tests.jwks import AUDIENCE, ISSUER, jwk_of, new_rsa_key, rs256_token, serving_jwks
from tests.services import RunningServices

pytestmark = pytest.mark.e2e

MIB = 1024 * 1024


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].split(";")[0] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["title"]
    return body


def invalid_field(response: httpx.Response, field: str) -> None:
    """A 422 problem whose errors point at `field` of the body."""
    body = assert_problem(response, 422)
    locations = [error["loc"] for error in body["errors"]]
    assert any(loc[:2] == ["body", field] for loc in locations), locations


async def feed_ids(client: httpx.AsyncClient) -> list[str]:
    response = await client.get("/api/memory", params={"limit": 100})
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


# --- POST /api/memory/documents: validation -------------------------------------------------------


async def test_note_validation_rejects_what_the_issue_rules_out(org: Org) -> None:
    post = org.admin.post
    invalid_field(await post("/api/memory/documents", json={"title": ""}), "title")
    invalid_field(await post("/api/memory/documents", json={"title": "   "}), "title")
    invalid_field(await post("/api/memory/documents", json={"title": "\u200b\u2060"}), "title")  # zero-width
    invalid_field(await post("/api/memory/documents", json={"title": "t" * 301}), "title")
    invalid_field(await post("/api/memory/documents", json={"title": "t", "body": "b" * (MIB + 1)}), "body")
    invalid_field(
        await post("/api/memory/documents", json={"title": "t", "tags": [f"t{n}" for n in range(33)]}), "tags"
    )
    invalid_field(await post("/api/memory/documents", json={"title": "t", "tags": ["x" * 65]}), "tags")
    invalid_field(await post("/api/memory/documents", json={"title": "t", "docClass": "poem"}), "docClass")
    invalid_field(await post("/api/memory/documents", json={"title": "t", "doc_class": "spec"}), "doc_class")
    assert_problem(await post("/api/memory/documents", json={}), 422)
    assert_problem(
        await post("/api/memory/documents", content=b"{not json", headers={"Content-Type": "application/json"}), 422
    )
    # Nothing invalid was created ...
    assert (await org.member.get("/api/memory/stats")).json()["documentsIndexed"] == 0
    # ... and the limits are where the issue puts them, not tighter.
    accepted = await post(
        "/api/memory/documents",
        params={"wait": "true"},
        json={"title": "t" * 300, "tags": [f"{n:02d}" + "x" * 62 for n in range(32)], "docClass": "runbook"},
    )
    assert accepted.status_code == 201, accepted.text
    detail = (await org.member.get(f"/api/memory/documents/{accepted.json()['id']}")).json()
    assert detail["item"]["title"] == "t" * 300
    assert len(detail["tags"]) == 32
    assert detail["item"]["docClass"] == "runbook"
    assert detail["item"]["kind"] == "note"


# --- Idempotency-Key ------------------------------------------------------------------------------


async def test_a_retry_with_the_same_idempotency_key_returns_the_first_result_and_creates_nothing(org: Org) -> None:
    key = {"Idempotency-Key": f"retry-{uuid.uuid4()}"}
    note = {"title": "First try", "body": "one", "tags": ["a"]}
    first = await org.admin.post("/api/memory/documents", params={"wait": "true"}, headers=key, json=note)
    assert first.status_code == 201, first.text
    note_id = first.json()["id"]
    # The id a key named before keys were stored (migration 0016): a retry across the upgrade finds its note.
    assert note_id == str(uuid.uuid5(KEY_NAMESPACE, f"{org.id}:admin-{org.slug}:{key['Idempotency-Key']}"))

    retry = await org.admin.post("/api/memory/documents", params={"wait": "true"}, headers=key, json=note)
    assert retry.status_code == 201, retry.text
    assert retry.json()["id"] == note_id
    again = await org.admin.post("/api/memory/documents", headers=key, json=dict(reversed(note.items())))
    assert again.status_code == 202, again.text
    assert again.json()["id"] == note_id

    # A different key is a different note (the control for the above).
    other = await org.admin.post(
        "/api/memory/documents",
        params={"wait": "true"},
        headers={"Idempotency-Key": f"other-{uuid.uuid4()}"},
        json={"title": "Another note"},
    )
    assert other.status_code == 201, other.text
    assert other.json()["id"] != note_id

    stats = (await org.member.get("/api/memory/stats")).json()
    assert stats["documentsIndexed"] == 2
    assert sorted(await feed_ids(org.member)) == sorted([note_id, other.json()["id"]])
    detail = (await org.member.get(f"/api/memory/documents/{note_id}")).json()
    assert (detail["item"]["title"], detail["body"], detail["version"]) == ("First try", "one", 1)


async def test_the_same_idempotency_key_with_another_request_is_422_and_changes_nothing(org: Org) -> None:
    key = {"Idempotency-Key": f"reused-{uuid.uuid4()}"}
    first = await org.admin.post(
        "/api/memory/documents", params={"wait": "true"}, headers=key, json={"title": "First try", "body": "one"}
    )
    assert first.status_code == 201, first.text

    for changed in ({"title": "Second try", "body": "one"}, {"title": "First try", "body": "two"}):
        reused = await org.admin.post("/api/memory/documents", params={"wait": "true"}, headers=key, json=changed)
        assert reused.status_code == 422, reused.text
        assert reused.headers["content-type"] == "application/problem+json"
        assert "Idempotency-Key" in reused.json()["detail"]

    assert await feed_ids(org.member) == [first.json()["id"]]
    detail = (await org.member.get(f"/api/memory/documents/{first.json()['id']}")).json()
    assert (detail["item"]["title"], detail["body"]) == ("First try", "one")


async def test_concurrent_first_uses_of_one_idempotency_key_make_one_note(org: Org) -> None:
    """A client that retries while its first request is still in flight: every copy names one note, and
    of copies with different bodies only one is taken."""
    same = {"Idempotency-Key": f"racing-{uuid.uuid4()}"}
    copies = await asyncio.gather(
        *(org.admin.post("/api/memory/documents", headers=same, json={"title": "Raced"}) for _ in range(6))
    )
    assert [copy.status_code for copy in copies] == [202] * 6
    assert len({copy.json()["id"] for copy in copies}) == 1

    differing = {"Idempotency-Key": f"racing-{uuid.uuid4()}"}
    rivals = await asyncio.gather(
        *(org.admin.post("/api/memory/documents", headers=differing, json={"title": f"Rival {n}"}) for n in range(6))
    )
    assert sorted(rival.status_code for rival in rivals) == [202] + [422] * 5
    winner = next(n for n, rival in enumerate(rivals) if rival.status_code == 202)

    # Retried once more, waiting: both notes are searchable, and they are the only ones.
    waited = [
        await org.admin.post("/api/memory/documents", params={"wait": "true"}, headers=key, json=body)
        for key, body in ((same, {"title": "Raced"}), (differing, {"title": f"Rival {winner}"}))
    ]
    assert [response.status_code for response in waited] == [201, 201]
    ids = [response.json()["id"] for response in waited]
    assert ids == [copies[0].json()["id"], rivals[winner].json()["id"]]
    assert sorted(await feed_ids(org.member)) == sorted(ids)


async def test_the_same_idempotency_key_of_another_caller_is_another_note(
    org: Org, migrated: Infrastructure, services: RunningServices
) -> None:
    key = {"Idempotency-Key": "shared-key"}
    _, api_key = await create_key(migrated.database_url, org.id, "ci", MemberRole.ADMIN)
    mine = await org.admin.post("/api/memory/documents", headers=key, json={"title": "Mine"})
    async with httpx.AsyncClient(
        base_url=services.base_url, timeout=30, headers={"Authorization": f"Bearer {api_key}", "X-Scope-Slug": org.slug}
    ) as ci:
        theirs = await ci.post("/api/memory/documents", headers=key, json={"title": "Theirs"})
    assert (mine.status_code, theirs.status_code) == (202, 202)
    assert mine.json()["id"] != theirs.json()["id"]


# --- Body limit -----------------------------------------------------------------------------------


async def test_a_note_body_at_its_limit_travels_through_the_object_store(org: Org, js: JetStreamContext) -> None:
    """1 MiB of characters, no event could carry it. Sent inline, a body this size made NATS close the
    gateway's connection for good (every later request 500). Mostly blank, so it is quick to embed."""
    body = "Aardvark opening. " + " " * (MIB - 40) + " closing zebrafish."
    assert len(body) == MIB - 3
    created = await org.admin.post(
        "/api/memory/documents", params={"wait": "true"}, json={"title": "Long", "body": body}
    )
    assert created.status_code == 201, created.text
    event = json.loads((await js.get_last_msg("KB", subjects.kb_document_upserted(org.id))).data or b"")
    assert "body" not in event["data"]
    assert event["data"]["bodyRef"]["bucket"] == "cortex-bodies"
    detail = await org.member.get(f"/api/memory/documents/{created.json()['id']}")
    assert detail.status_code == 200, detail.text
    assert detail.json()["body"] == body
    found = await org.member.get("/api/memory", params={"q": "zebrafish"})
    assert [item["id"] for item in found.json()["items"]] == [created.json()["id"]]


async def test_a_body_over_the_gateway_limit_is_413_before_it_is_read(org: Org) -> None:
    limit = GatewaySettings.model_fields["max_body_bytes"].default
    assert limit == 4 * MIB
    oversized = b'{"title": "big", "body": "' + b"x" * (5 * MIB) + b'"}'
    declared = await org.admin.post(
        "/api/memory/documents", content=oversized, headers={"Content-Type": "application/json"}
    )
    body = assert_problem(declared, 413)
    assert str(limit) in body["detail"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"title": "big", "body": "'
        for _ in range(5):
            yield b"x" * MIB
        yield b'"}'

    streamed = await org.admin.post(
        "/api/memory/documents", content=chunks(), headers={"Content-Type": "application/json"}
    )
    # One problem document either way (before: two titles, and no `instance` when the length was declared).
    assert assert_problem(streamed, 413) == body == body | {"instance": "/api/memory/documents"}
    assert (await org.member.get("/api/memory/stats")).json()["documentsIndexed"] == 0


# --- API keys -------------------------------------------------------------------------------------


async def test_an_api_key_works_with_its_role_until_it_is_revoked(
    org: Org, migrated: Infrastructure, services: RunningServices
) -> None:
    member_key_id, member_key = await create_key(migrated.database_url, org.id, "agent", MemberRole.MEMBER)
    _, admin_key = await create_key(migrated.database_url, org.id, "ci", MemberRole.ADMIN)

    def client(key: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=services.base_url, timeout=30, headers={"Authorization": f"Bearer {key}", "X-Scope-Slug": org.slug}
        )

    async with client(member_key) as agent, client(admin_key) as ci:
        note = await ci.post("/api/memory/documents", params={"wait": "true"}, json={"title": "Written by CI"})
        assert note.status_code == 201, note.text
        assert await feed_ids(agent) == [note.json()["id"]]
        assert (await agent.get(f"/api/memory/documents/{note.json()['id']}")).status_code == 200
        assert_problem(await agent.post("/api/memory/documents", json={"title": "Written by an agent"}), 403)

        assert await revoke_key(migrated.database_url, org.id, member_key_id)
        for response in (await agent.get("/api/memory"), await agent.get("/api/memory/stats")):
            assert assert_problem(response, 401)["detail"] == "The API key is revoked or unknown."
            assert response.headers["WWW-Authenticate"] == "Bearer"
        assert not await revoke_key(migrated.database_url, org.id, member_key_id)  # already revoked
        assert (await ci.get("/api/memory")).status_code == 200  # the other key is untouched

    # A key that is not one: malformed, or a made-up secret, is 401.
    for bogus in ("cxk_not-a-key", f"cxk_{org.id.hex}_{'z' * 43}", f"cxk_{org.id.hex}_short"):
        async with client(bogus) as nobody:
            assert_problem(await nobody.get("/api/memory"), 401)


async def test_an_api_key_of_another_organization_is_404_like_a_stranger(
    make_org: OrgFactory, migrated: Infrastructure, services: RunningServices
) -> None:
    mine, theirs = await make_org(), await make_org()
    _, key = await create_key(migrated.database_url, mine.id, "agent", MemberRole.ADMIN)
    made_up = f"cxk_{mine.id.hex}_{'z' * 43}"
    for slug in (theirs.slug, f"nope-{uuid.uuid4().hex}"):  # whether that organization exists or not
        for credential in (key, made_up):
            headers = {"Authorization": f"Bearer {credential}", "X-Scope-Slug": slug}
            async with httpx.AsyncClient(base_url=services.base_url, timeout=30, headers=headers) as client:
                assert_problem(await client.get("/api/memory"), 404)


# --- RS256 via JWKS, and the default rate limit, on a second gateway ---------------------------------


@dataclass(frozen=True)
class IdentityProvider:
    base_url: str
    key: rsa.RSAPrivateKey
    kid: str


@pytest.fixture(scope="module")
def idp_keys() -> Iterator[tuple[rsa.RSAPrivateKey, str, str]]:
    key, kid = new_rsa_key(), f"key-{uuid.uuid4().hex[:8]}"
    with serving_jwks([jwk_of(key, kid), jwk_of(new_rsa_key(), "another-published-key")]) as url:
        yield key, kid, url


@pytest.fixture(scope="module")
async def idp(
    idp_keys: tuple[rsa.RSAPrivateKey, str, str], migrated: Infrastructure, services: RunningServices
) -> AsyncIterator[IdentityProvider]:
    key, kid, jwks_url = idp_keys
    async with running_gateway(migrated, jwks_url=jwks_url, jwt_issuer=ISSUER, jwt_audience=AUDIENCE) as base_url:
        yield IdentityProvider(base_url, key, kid)


async def call_as(base_url: str, token: str, slug: str, path: str = "/api/memory") -> httpx.Response:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        return await client.get(path, headers={"Authorization": f"Bearer {token}", "X-Scope-Slug": slug})


async def test_rs256_tokens_are_verified_against_the_jwks(
    idp: IdentityProvider, org: Org, migrated: Infrastructure, services: RunningServices
) -> None:
    user = f"idp-user-{uuid.uuid4().hex[:8]}"
    await ensure_membership(migrated.database_url, org.slug, user, MemberRole.MEMBER, create=True)
    valid = rs256_token(idp.key, idp.kid, user)
    assert (await call_as(idp.base_url, valid, org.slug)).status_code == 200

    stranger = new_rsa_key()
    rejected = {
        "wrong audience": rs256_token(idp.key, idp.kid, user, audience="someone-else"),
        "wrong issuer": rs256_token(idp.key, idp.kid, user, issuer="https://evil.test"),
        "expired": rs256_token(idp.key, idp.kid, user, lifetime=timedelta(minutes=-5)),
        "signed by another key": rs256_token(stranger, idp.kid, user),
        "unknown key id": rs256_token(stranger, "no-such-kid", user),
        "another published key's id": rs256_token(stranger, "another-published-key", user),
        # Signed by the identity provider, but no PostgreSQL text (before: 500 from the membership lookup).
        "NUL in the user": rs256_token(idp.key, idp.kid, "al\x00ice"),
        "lone surrogate in the user": rs256_token(idp.key, idp.kid, "al\ud800ice"),
        "no signature": jwt.encode(
            {"sub": user, "iss": ISSUER, "aud": AUDIENCE, "exp": 9_999_999_999}, "", algorithm="none"
        ),
    }
    for case, token in rejected.items():
        response = await call_as(idp.base_url, token, org.slug)
        body = assert_problem(response, 401)
        assert response.headers["www-authenticate"] == "Bearer", case
        if case == "expired":
            assert "expired" in body["detail"]

    # Valid, but the user is not a member of the organization: like any other non-member, 404.
    outsider = rs256_token(idp.key, idp.kid, f"idp-outsider-{uuid.uuid4().hex[:8]}")
    assert_problem(await call_as(idp.base_url, outsider, org.slug), 404)
    # The deployment's own HS256 tokens still work there; RS256 tokens do not work where no JWKS is set.
    assert (await call_as(idp.base_url, issue_token(user, services.secret), org.slug)).status_code == 200
    assert_problem(await call_as(services.base_url, valid, org.slug), 401)


async def test_a_token_over_its_rate_limit_gets_429_with_retry_after(idp: IdentityProvider, org: Org) -> None:
    burst = GatewaySettings.model_fields["rate_limit_burst"].default
    per_second = GatewaySettings.model_fields["rate_limit_per_minute"].default / 60
    assert burst == 60  # the gateway under test runs the defaults
    headers = dict(org.member.headers)  # the member's HS256 token and scope, sent to the second gateway
    async with httpx.AsyncClient(base_url=idp.base_url, timeout=30, headers=headers) as client:
        started = time.monotonic()
        responses = await asyncio.gather(*(client.get("/api/memory/stats") for _ in range(burst + 20)))
        statuses = [r.status_code for r in responses]
        assert set(statuses) <= {200, 429}, statuses
        assert burst <= statuses.count(200) < burst + 20, statuses
        for limited in (r for r in responses if r.status_code == 429):
            assert assert_problem(limited, 429)["instance"] == "/api/memory/stats"
            assert int(limited.headers["retry-after"]) >= 1
        # The same credential written otherwise is still spent (the scheme is case-insensitive, spaces vary).
        token = org.member.headers["Authorization"].split(" ", 1)[1]
        spellings = [f"bearer {token}", f"BEARER {token}", f"Bearer  {token}"] * 20
        respelled = await asyncio.gather(
            *(client.get("/api/memory/stats", headers={"Authorization": written}) for written in spellings)
        )
        # One bucket lets through its burst plus what refilled meanwhile (the machine may be slow, so the
        # refill is measured, not guessed); a bucket per spelling would let all 60 respelled requests through.
        refilled = per_second * (time.monotonic() - started)
        answered = statuses.count(200) + [r.status_code for r in respelled].count(200)
        assert answered <= burst + refilled + 1, (answered, refilled)
        # Another credential has a bucket of its own.
        admin = await client.get("/api/memory/stats", headers={"Authorization": org.admin.headers["Authorization"]})
        assert admin.status_code == 200, admin.text
