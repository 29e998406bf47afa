"""BOLA matrix: every endpoint that takes an id or a scope, called by another organization's credentials.

Organization A has a Mission, a Team, a Work and documents whose titles and bodies carry unique marker
words. Organization B's users and API keys try A's slug and A's ids on every endpoint; every answer is a
404 (or 403 for B's own member writing to B, 401 for a key that is not one) problem document, and no byte
of A's data is in any body.
The ids a caller sent itself (echoed back in `instance`, or as a selected facet chip) do not count.
"""

import uuid
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_cli.api_keys import create_key
from cortex_contracts.catalog import CatalogEntity
from cortex_store.models import MemberRole
from tests.catalog_events import publish_catalog
from tests.conftest import Org, OrgFactory
from tests.events import IndexedWatcher, publish_upsert, upsert_event
from tests.infrastructure import Infrastructure
from tests.processed import CATALOG_CONSUMER, inbox_keys, wait_processed
from tests.services import RunningServices

pytestmark = pytest.mark.e2e


def marker(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, (response.request.method, response.request.url, response.text)
    assert response.headers["content-type"].split(";")[0] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    return body


def assert_no_leak(response: httpx.Response, secrets: list[str], *, echoed: tuple[str, ...] = ()) -> None:
    """None of `secrets` in the body, once the values the caller itself sent (`echoed`) are taken out."""
    text = response.text
    for value in echoed:
        text = text.replace(value, "")
    for secret in secrets:
        assert secret not in text, (secret, response.request.url, response.text)


class WorldA:
    """Organization A's catalog and documents, and every string that would betray them."""

    def __init__(self, org: Org) -> None:
        self.org = org
        self.mission, self.team, self.work = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
        self.mission_title, self.team_name, self.work_title = marker("mission"), marker("team"), marker("work")
        self.words = [marker("quokka"), marker("marmot"), marker("tapir"), marker("okapi")]
        self.docs = [
            (uuid.uuid4(), f"Secret plan {self.words[0]}", f"# Plan\n\nThe {self.words[1]} launch is on Friday."),
            (uuid.uuid4(), f"Payroll {self.words[2]}", f"Salaries of the {self.words[3]} team rise in May."),
        ]
        self.tag = marker("tag")

    @property
    def secrets(self) -> list[str]:
        return [
            *self.words,
            *(str(doc_id) for doc_id, _, _ in self.docs),
            *(title for _, title, _ in self.docs),
            self.mission_title,
            self.team_name,
            self.work_title,
            self.tag,
        ]

    async def publish(self, js: JetStreamContext, nats_client: NATS, infra: Infrastructure) -> None:
        org_id = self.org.id
        events = [
            await publish_catalog(
                js,
                org_id,
                CatalogEntity.MISSION,
                {"missionId": str(self.mission), "title": self.mission_title, "version": 1},
            ),
            await publish_catalog(
                js, org_id, CatalogEntity.TEAM, {"teamId": str(self.team), "name": self.team_name, "version": 1}
            ),
            await publish_catalog(
                js,
                org_id,
                CatalogEntity.WORK,
                {"workId": str(self.work), "title": self.work_title, "missionId": str(self.mission), "version": 1},
            ),
            await publish_catalog(
                js,
                org_id,
                CatalogEntity.TEAM_RESOURCE,
                {"teamId": str(self.team), "resourceType": "work", "resourceId": str(self.work), "version": 1},
            ),
        ]
        watcher = await IndexedWatcher().start(nats_client, org_id)
        try:
            for doc_id, title, body in self.docs:
                event = upsert_event(
                    org_id,
                    doc_id,
                    title=title,
                    body=body,
                    version=1,
                    workId=str(self.work),
                    docClass="spec",
                    tags=[self.tag],
                )
                await publish_upsert(js, event)
            for doc_id, _, _ in self.docs:
                await watcher.wait_for(doc_id, 1)
        finally:
            await watcher.stop()
        await wait_processed(infra.database_url, CATALOG_CONSUMER, inbox_keys(org_id, events))


@pytest.fixture
async def world(make_org: OrgFactory, js: JetStreamContext, nats_client: NATS, migrated: Infrastructure) -> WorldA:
    a = WorldA(await make_org())
    await a.publish(js, nats_client, migrated)
    return a


async def test_a_sees_its_own_data(world: WorldA) -> None:
    """The control: the markers are really there for A, so their absence elsewhere means something."""
    a, doc_id = world.org, world.docs[0][0]
    feed = (await a.member.get("/api/memory")).json()
    assert {item["id"] for item in feed["items"]} == {str(d) for d, _, _ in world.docs}
    assert {item["workTitle"] for item in feed["items"]} == {world.work_title}
    detail = await a.member.get(f"/api/memory/documents/{doc_id}")
    assert detail.status_code == 200, detail.text
    assert world.words[1] in detail.json()["body"]
    facets = (await a.member.get("/api/memory/facets")).json()
    assert {v["label"] for v in facets["work"]} == {world.work_title}
    assert (await a.member.get("/api/memory/stats")).json()["documentsIndexed"] == 2


async def test_other_organizations_credentials_on_a_scope_and_ids_are_404(
    world: WorldA, make_org: OrgFactory, services: RunningServices, migrated: Infrastructure
) -> None:
    a, b = world.org, await make_org()
    _, b_member_key = await create_key(migrated.database_url, b.id, "agent", MemberRole.MEMBER)
    _, b_admin_key = await create_key(migrated.database_url, b.id, "ci", MemberRole.ADMIN)
    doc_id = world.docs[0][0]
    scope_a = {"X-Scope-Slug": a.slug}
    callers: dict[str, httpx.AsyncClient] = {"b admin": b.admin, "b member": b.member}
    key_headers = {"b member key": b_member_key, "b admin key": b_admin_key}
    async with httpx.AsyncClient(base_url=services.base_url, timeout=30) as anonymous:
        for name, client in [*callers.items(), *((name, anonymous) for name in key_headers)]:
            headers = dict(scope_a)
            if name in key_headers:
                headers["Authorization"] = f"Bearer {key_headers[name]}"
            requests = [
                client.get("/api/memory", headers=headers),
                client.get("/api/memory", headers=headers, params={"q": world.words[0]}),
                client.get("/api/memory", headers=headers, params={"work": str(world.work), "tag": world.tag}),
                client.get("/api/memory/facets", headers=headers),
                client.get("/api/memory/facets", headers=headers, params={"mission": str(world.mission)}),
                client.get("/api/memory/stats", headers=headers),
                client.get(f"/api/memory/documents/{doc_id}", headers=headers),
                client.post("/api/memory/documents", headers=headers, json={"title": f"by {name}"}),
            ]
            for request in requests:
                response = await request
                body = assert_problem(response, 404)
                assert body["detail"] == "No such organization, or this credential is not one of its members.", name
                assert_no_leak(response, world.secrets, echoed=(str(doc_id),))
    # Nothing B tried wrote anything into A.
    assert {item["id"] for item in (await a.member.get("/api/memory")).json()["items"]} == {
        str(d) for d, _, _ in world.docs
    }


async def test_a_non_member_cannot_tell_an_existing_organization_from_a_missing_one(
    world: WorldA, make_org: OrgFactory
) -> None:
    b = await make_org()
    existing = await b.member.get("/api/memory", headers={"X-Scope-Slug": world.org.slug})
    missing = await b.member.get("/api/memory", headers={"X-Scope-Slug": f"no-such-{uuid.uuid4().hex[:8]}"})
    first, second = assert_problem(existing, 404), assert_problem(missing, 404)
    assert {k: v for k, v in first.items() if k != "instance"} == {k: v for k, v in second.items() if k != "instance"}


async def test_own_scope_with_a_ids_finds_nothing_of_a(world: WorldA, make_org: OrgFactory) -> None:
    b = await make_org()
    doc_id = world.docs[1][0]
    ids_of_a = (str(doc_id), str(world.work), str(world.mission), str(world.team))
    for client in (b.admin, b.member):
        detail = await client.get(f"/api/memory/documents/{doc_id}")
        assert_problem(detail, 404)
        assert_no_leak(detail, world.secrets, echoed=ids_of_a)

        filters = {"work": str(world.work), "mission": str(world.mission), "team": str(world.team)}
        for name, value in filters.items():
            feed = await client.get("/api/memory", params={name: value})
            assert feed.status_code == 200, feed.text
            assert feed.json()["items"] == []
            assert_no_leak(feed, world.secrets, echoed=ids_of_a)

            facets = await client.get("/api/memory/facets", params={name: value})
            assert facets.status_code == 200, facets.text
            # The selected chip is echoed with count 0 and its own id as the label: not A's title.
            # (The Mission and Team facets are absent altogether: B has neither.)
            chips = {v["value"]: v for v in facets.json().get(name) or []}
            assert chips.get(value, {"value": value, "label": value, "count": 0}) == {
                "value": value,
                "label": value,
                "count": 0,
            }
            assert_no_leak(facets, world.secrets, echoed=ids_of_a)

        for q in (world.words[0], " ".join(world.words), world.docs[0][1]):
            search = await client.get("/api/memory", params={"q": q})
            assert search.status_code == 200, search.text
            assert search.json()["items"] == []
            assert_no_leak(search, world.secrets, echoed=(q,))
        tagged = await client.get("/api/memory", params={"tag": world.tag})
        assert tagged.json()["items"] == []
        stats = await client.get("/api/memory/stats")
        assert stats.json()["documentsIndexed"] == 0
        assert_no_leak(stats, world.secrets)


async def test_the_organization_comes_only_from_the_scope_header(world: WorldA, make_org: OrgFactory) -> None:
    b = await make_org()
    a = world.org
    # Query parameters that name A are refused (no route declares them); the header names B.
    feed = await b.member.get(
        "/api/memory", params={"organizationId": str(a.id), "orgId": str(a.id), "slug": a.slug, "X-Scope-Slug": a.slug}
    )
    assert_problem(feed, 422)
    assert_no_leak(feed, world.secrets)
    assert (await b.member.get("/api/memory")).json()["items"] == []
    # A body that names A is refused outright (no unknown fields).
    note = await b.admin.post("/api/memory/documents", json={"title": "mine", "organizationId": str(a.id)})
    assert_problem(note, 422)
    assert_no_leak(note, world.secrets)


async def test_b_member_cannot_write_to_b(
    make_org: OrgFactory, migrated: Infrastructure, services: RunningServices
) -> None:
    b = await make_org()
    denied = await b.member.post("/api/memory/documents", json={"title": "a member's note"})
    assert_problem(denied, 403)
    _, member_key = await create_key(migrated.database_url, b.id, "agent", MemberRole.MEMBER)
    async with httpx.AsyncClient(
        base_url=services.base_url,
        timeout=30,
        headers={"Authorization": f"Bearer {member_key}", "X-Scope-Slug": b.slug},
    ) as agent:
        assert_problem(await agent.post("/api/memory/documents", json={"title": "an agent's note"}), 403)
        assert (await agent.get("/api/memory")).status_code == 200
    # The admin may: the 403 above is about the role, not the request.
    allowed = await b.admin.post("/api/memory/documents", json={"title": "an admin's note"})
    assert allowed.status_code == 202, allowed.text


async def test_an_api_key_of_a_is_404_under_b_scope(
    world: WorldA, make_org: OrgFactory, migrated: Infrastructure, services: RunningServices
) -> None:
    a, b = world.org, await make_org()
    _, a_key = await create_key(migrated.database_url, a.id, "agent", MemberRole.ADMIN)
    _, b_key = await create_key(migrated.database_url, b.id, "agent", MemberRole.ADMIN)
    secret = a_key.removeprefix("cxk_").partition("_")[2]  # the secret itself may contain "_"
    a_key_naming_b = f"cxk_{b.id.hex}_{secret}"  # A's secret, dressed up as a key of B
    async with httpx.AsyncClient(base_url=services.base_url, timeout=30) as client:

        async def call(key: str, slug: str, path: str = "/api/memory") -> httpx.Response:
            return await client.get(path, headers={"Authorization": f"Bearer {key}", "X-Scope-Slug": slug})

        own = await call(a_key, a.slug)
        assert own.status_code == 200, own.text
        assert len(own.json()["items"]) == 2
        # A key naming B under B's scope is not one of B's keys: not a valid credential (401).
        refusals = (
            (a_key, b.slug, 404),
            (b_key, a.slug, 404),
            (a_key_naming_b, b.slug, 401),
            (a_key_naming_b, a.slug, 404),
        )
        for key, slug, status in refusals:
            for path in (
                "/api/memory",
                "/api/memory/stats",
                "/api/memory/facets",
                f"/api/memory/documents/{world.docs[0][0]}",
            ):
                response = await call(key, slug, path)
                assert_problem(response, status)
                assert_no_leak(response, world.secrets, echoed=(str(world.docs[0][0]),))
        write = await client.post(
            "/api/memory/documents",
            headers={"Authorization": f"Bearer {a_key}", "X-Scope-Slug": b.slug},
            json={"title": "from A's key"},
        )
        assert_problem(write, 404)
