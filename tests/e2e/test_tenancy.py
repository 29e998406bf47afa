"""One organization never sees, nor changes, another organization's knowledge."""

import uuid

import httpx
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_cli.organizations import InvalidSlug, UnknownOrganization, ensure_membership, organization_id
from cortex_contracts import subjects
from cortex_contracts.documents import TYPE_DOCUMENT_UPSERTED
from cortex_contracts.envelope import new_envelope
from cortex_store.models import MemberRole
from tests.conftest import Org, OrgFactory
from tests.dlq import read_dead_letters
from tests.events import IndexedWatcher, delete_event, publish_delete, publish_upsert, search_ids, upsert_event
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


def unique_word(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def assert_problem(response: httpx.Response, status: int) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert {"type", "title", "status", "detail"} <= body.keys()


async def index(js: JetStreamContext, nats_client: NATS, org: Org, *docs: tuple[uuid.UUID, str, str]) -> None:
    watcher = await IndexedWatcher().start(nats_client, org.id)
    try:
        for document_id, title, body in docs:
            await publish_upsert(js, upsert_event(org.id, document_id, title=title, body=body, version=1))
        for document_id, _, _ in docs:
            await watcher.wait_for(document_id, 1)
    finally:
        await watcher.stop()


async def test_an_organization_never_sees_another_organizations_documents(
    make_org: OrgFactory, js: JetStreamContext, nats_client: NATS
) -> None:
    a, b = await make_org(), await make_org()
    a_words = [unique_word("quokka"), unique_word("marmot"), unique_word("tapir")]
    a_docs = [
        (uuid.uuid4(), f"Secret plan {a_words[0]}", f"# Plan\n\nThe {a_words[1]} launch is on Friday."),
        (uuid.uuid4(), f"Payroll {a_words[2]}", f"Salaries for {a_words[0]} and {a_words[1]} rise in May."),
    ]
    b_doc = (uuid.uuid4(), "Team lunch", "We meet for lunch on Thursdays at noon.")
    await index(js, nats_client, a, *a_docs)
    await index(js, nats_client, b, b_doc)
    a_ids = {str(doc_id) for doc_id, _, _ in a_docs}
    a_secrets = [*a_words, *a_ids, *(title for _, title, _ in a_docs)]

    # A sees its own documents, by its own words.
    assert set(await search_ids(a.member)) == a_ids
    assert (await search_ids(a.member, a_words[2]))[0] == str(a_docs[1][0])

    # B sees only its own, in the feed and in a search for A's words; nothing of A's comes back.
    responses = [
        await b.member.get("/api/memory"),
        await b.member.get("/api/memory", params={"q": a_words[0]}),
        await b.member.get("/api/memory", params={"q": " ".join(a_words)}),
        await b.admin.get("/api/memory", params={"q": a_docs[0][1]}),
    ]
    for response in responses:
        assert response.status_code == 200, response.text
        assert {item["id"] for item in response.json()["items"]} <= {str(b_doc[0])}
        for secret in a_secrets:
            assert secret not in response.text
    assert [item["id"] for item in responses[0].json()["items"]] == [str(b_doc[0])]

    # B's token naming A's organization: no such organization, and still nothing of A's.
    for client in (b.admin, b.member):
        for response in (
            await client.get("/api/memory", headers={"X-Scope-Slug": a.slug}),
            await client.get("/api/memory", headers={"X-Scope-Slug": a.slug}, params={"q": a_words[0]}),
            await client.post("/api/memory/documents", headers={"X-Scope-Slug": a.slug}, json={"title": "x"}),
        ):
            assert_problem(response, 404)
            for secret in a_secrets:
                assert secret not in response.text

    # A's page cursor is worthless to B: it is bound to A's organization.
    a_page = (await a.member.get("/api/memory", params={"limit": 1})).json()
    assert a_page["nextCursor"]
    response = await b.member.get("/api/memory", params={"limit": 1, "cursor": a_page["nextCursor"]})
    assert_problem(response, 400)
    for secret in a_secrets:
        assert secret not in response.text


async def test_events_of_one_organization_cannot_touch_another_organizations_documents(
    make_org: OrgFactory, js: JetStreamContext, nats_client: NATS
) -> None:
    a, b = await make_org(), await make_org()
    word = unique_word("okapi")
    a_doc = uuid.uuid4()
    await index(js, nats_client, a, (a_doc, f"Roadmap {word}", f"The {word} roadmap for next year."))

    # B claims A's document id, and sends events dressed up as A's on B's subjects.
    await publish_upsert(js, upsert_event(b.id, a_doc, title="Hijacked", body="Overwritten by B.", version=7))
    disguised = upsert_event(a.id, uuid.uuid4(), title="Disguised", body="orgid says A.", version=1)
    await js.publish(subjects.kb_document_upserted(b.id), disguised.to_wire())
    mismatched = new_envelope(
        event_type=TYPE_DOCUMENT_UPSERTED,
        source="tests/upstream",
        org_id=b.id,
        data={"documentId": str(uuid.uuid4()), "organizationId": str(a.id), "title": "Mismatched", "version": 1},
    )
    await publish_upsert(js, mismatched)

    letters = await read_dead_letters(js, b.id, 3)

    assert [(letter.record["reason"], letter.record["deliveries"]) for letter in letters] == [("poison message", 1)] * 3
    errors = sorted(letter.record["error"] for letter in letters)
    assert sum("belongs to another organization" in error for error in errors) == 1, errors
    assert sum("differs from event orgid" in error for error in errors) == 1, errors
    assert sum("payload organizationId differs" in error for error in errors) == 1, errors
    await assert_untouched(a, a_doc, word)
    assert await search_ids(b.member) == []


async def test_deleting_another_organizations_document_is_refused_at_once(
    make_org: OrgFactory, js: JetStreamContext, nats_client: NATS
) -> None:
    a, b = await make_org(), await make_org()
    word = unique_word("okapi")
    a_doc = uuid.uuid4()
    await index(js, nats_client, a, (a_doc, f"Roadmap {word}", f"The {word} roadmap for next year."))

    await publish_delete(js, delete_event(b.id, a_doc, version=8))

    (letter,) = await read_dead_letters(js, b.id, 1)
    await assert_untouched(a, a_doc, word)
    # It can never succeed, so it is dead-lettered on its first delivery, not retried.
    assert (letter.record["reason"], letter.record["deliveries"]) == ("poison message", 1), letter.record["error"]
    assert "belongs to another organization" in letter.record["error"]


async def assert_untouched(a: Org, document: uuid.UUID, word: str) -> None:
    response = await a.member.get("/api/memory", params={"q": word})
    items = response.json()["items"]
    assert [(item["id"], item["title"]) for item in items] == [(str(document), f"Roadmap {word}")]
    assert word in items[0]["snippet"]
    assert await search_ids(a.member) == [str(document)]


@pytest.mark.parametrize("slug", ["日本", "ünï", "Bad Slug!", "-leading-dash"])
async def test_an_organization_is_not_created_with_a_slug_the_gateway_could_not_match(
    migrated: Infrastructure, slug: str
) -> None:
    """The gateway reads X-Scope-Slug as latin-1 header bytes: `日本` could be created but never named."""
    with pytest.raises(InvalidSlug, match="ASCII letters, digits"):
        await ensure_membership(migrated.database_url, slug, "alice", MemberRole.ADMIN, create=True)
    with pytest.raises(UnknownOrganization):  # nothing was made
        await organization_id(migrated.database_url, slug)
    assert await ensure_membership(
        migrated.database_url, f"ok-{uuid.uuid4().hex[:8]}", "a", MemberRole.ADMIN, create=True
    )
