"""Catalog events out of order and duplicated converge to the newest state.

Each event is published after the previous one was handled (the indexer's inbox records it), so the
older versions really do arrive after the newer ones; the final state is then read through the API.
"""

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_contracts.catalog import CatalogEntity, catalog_subject, catalog_type
from cortex_contracts.envelope import new_envelope
from cortex_gateway.tokens import issue_token
from cortex_messaging.publisher import publish_event
from tests.catalog_events import publish_catalog
from tests.cli_runs import cli
from tests.conftest import Org
from tests.events import IndexedWatcher, publish_upsert, upsert_event
from tests.infrastructure import Infrastructure
from tests.processed import CATALOG_CONSUMER, inbox_keys, wait_processed
from tests.services import RunningServices

pytestmark = pytest.mark.e2e


class Catalog:
    """Publishes one catalog change at a time and waits until the indexer has handled it."""

    def __init__(self, js: JetStreamContext, infra: Infrastructure, org_id: uuid.UUID) -> None:
        self.js, self.infra, self.org_id = js, infra, org_id

    async def change(self, entity: CatalogEntity, data: dict[str, Any], *, action: str = "upserted") -> str:
        event_id = await publish_catalog(self.js, self.org_id, entity, data, action=action)
        await wait_processed(self.infra.database_url, CATALOG_CONSUMER, inbox_keys(self.org_id, [event_id]))
        return event_id

    async def redeliver(self, entity: CatalogEntity, event_id: str, data: dict[str, Any]) -> None:
        """The same event (same id) once more, as a retrying producer would send it."""
        event = new_envelope(
            event_type=catalog_type(entity, "upserted"),
            source="tests/upstream",
            org_id=self.org_id,
            data={"organizationId": str(self.org_id), **data},
            event_id=event_id,
        )
        await publish_event(self.js, catalog_subject(self.org_id, entity, "upserted"), event)
        await wait_processed(self.infra.database_url, CATALOG_CONSUMER, inbox_keys(self.org_id, [event_id]))


async def index_one(js: JetStreamContext, nats_client: NATS, org: Org, **extra: Any) -> uuid.UUID:
    doc_id = uuid.uuid4()
    watcher = await IndexedWatcher().start(nats_client, org.id)
    try:
        await publish_upsert(js, upsert_event(org.id, doc_id, title="A document", body="Text.", version=1, **extra))
        await watcher.wait_for(doc_id, 1)
    finally:
        await watcher.stop()
    return doc_id


async def item(org: Org, doc_id: uuid.UUID) -> dict[str, Any]:
    response = await org.member.get("/api/memory")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = next(i for i in response.json()["items"] if i["id"] == str(doc_id))
    return found


async def facets(org: Org, **params: str) -> dict[str, Any]:
    response = await org.member.get("/api/memory/facets", params=params)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def test_a_work_converges_to_its_newest_version(
    org: Org, js: JetStreamContext, nats_client: NATS, migrated: Infrastructure
) -> None:
    catalog = Catalog(js, migrated, org.id)
    work = str(uuid.uuid4())
    doc_id = await index_one(js, nats_client, org, workId=work)

    def version(n: int) -> dict[str, Any]:
        return {"workId": work, "title": f"Work v{n}", "version": n}

    newest = await catalog.change(CatalogEntity.WORK, version(3))
    await catalog.change(CatalogEntity.WORK, version(1))
    await catalog.change(CatalogEntity.WORK, version(2))
    await catalog.redeliver(CatalogEntity.WORK, newest, version(3))
    await catalog.change(CatalogEntity.WORK, {**version(3), "title": "Work v3, sent twice"})  # equal version
    assert (await item(org, doc_id))["workTitle"] == "Work v3"
    assert [(v["value"], v["label"], v["count"]) for v in (await facets(org))["work"]] == [(work, "Work v3", 1)]

    await catalog.change(CatalogEntity.WORK, {"workId": work, "version": 4}, action="deleted")
    await catalog.change(CatalogEntity.WORK, version(2))  # late: must not bring the Work back
    await catalog.change(CatalogEntity.WORK, version(4))  # same version as the deletion: neither
    found = await item(org, doc_id)
    assert found["workId"] == work  # the document still names it ...
    assert "workTitle" not in found  # ... but the Work is gone
    work_facet = [(v["value"], v["label"], v["count"]) for v in (await facets(org))["work"]]
    assert work_facet == [(work, work, 1)]  # still counted, as `work=<id>` lists it; labelled by its id

    await catalog.change(CatalogEntity.WORK, version(5))  # a newer upsert does bring it back
    assert (await item(org, doc_id))["workTitle"] == "Work v5"
    await catalog.change(CatalogEntity.WORK, {"workId": work, "version": 5}, action="deleted")  # wins the tie
    assert "workTitle" not in await item(org, doc_id)


async def test_a_mission_converges_to_its_newest_version(
    org: Org, js: JetStreamContext, nats_client: NATS, migrated: Infrastructure
) -> None:
    catalog = Catalog(js, migrated, org.id)
    work, mission = str(uuid.uuid4()), str(uuid.uuid4())
    await catalog.change(CatalogEntity.WORK, {"workId": work, "title": "W", "missionId": mission, "version": 1})
    doc_id = await index_one(js, nats_client, org, workId=work)
    for n in (3, 1, 2):
        await catalog.change(CatalogEntity.MISSION, {"missionId": mission, "title": f"Mission v{n}", "version": n})
    assert (await item(org, doc_id))["missionTitle"] == "Mission v3"
    assert [v["label"] for v in (await facets(org))["mission"]] == ["Mission v3"]
    await catalog.change(CatalogEntity.MISSION, {"missionId": mission, "version": 4}, action="deleted")
    await catalog.change(CatalogEntity.MISSION, {"missionId": mission, "title": "Mission v2", "version": 2})
    assert "missionTitle" not in await item(org, doc_id)
    assert (await facets(org))["mission"] == []


async def test_a_team_and_its_resources_converge_to_their_newest_version(
    org: Org, js: JetStreamContext, nats_client: NATS, migrated: Infrastructure
) -> None:
    catalog = Catalog(js, migrated, org.id)
    team, other, work = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    await catalog.change(CatalogEntity.WORK, {"workId": work, "title": "W", "version": 1})
    doc_id = await index_one(js, nats_client, org, workId=work)
    owns = {"teamId": team, "resourceType": "work", "resourceId": work}

    # The ownership arrives before the Team itself, then the Team's versions out of order, twice.
    await catalog.change(CatalogEntity.TEAM_RESOURCE, {**owns, "version": 1})
    newest = await catalog.change(CatalogEntity.TEAM, {"teamId": team, "name": "Team v3", "version": 3})
    await catalog.change(CatalogEntity.TEAM, {"teamId": team, "name": "Team v1", "version": 1})
    await catalog.change(CatalogEntity.TEAM, {"teamId": team, "name": "Team v2", "version": 2})
    await catalog.redeliver(CatalogEntity.TEAM, newest, {"teamId": team, "name": "Team v3", "version": 3})
    found = await item(org, doc_id)
    assert (found["teamId"], found["teamName"]) == (team, "Team v3")
    assert [(v["value"], v["label"], v["count"]) for v in (await facets(org))["team"]] == [(team, "Team v3", 1)]

    # The ownership: deleted at v3, a late v2 upsert must not restore it.
    await catalog.change(CatalogEntity.TEAM, {"teamId": other, "name": "Other team", "version": 1})
    await catalog.change(CatalogEntity.TEAM_RESOURCE, {**owns, "version": 3}, action="deleted")
    await catalog.change(CatalogEntity.TEAM_RESOURCE, {**owns, "version": 2})
    assert "teamName" not in await item(org, doc_id)
    filtered = await org.member.get("/api/memory", params={"team": team})
    assert filtered.json()["items"] == []
    assert (await facets(org))["team"] == []  # Teams exist, but none owns a Work with documents
    team_counts = {v["value"]: v["count"] for v in (await facets(org, team=team))["team"]}
    assert team_counts == {team: 0}  # still a chip while selected, but it owns nothing now

    # Re-owned at v4, then the Team itself deleted at v4 and a late upsert at v2.
    await catalog.change(CatalogEntity.TEAM_RESOURCE, {**owns, "version": 4})
    assert (await item(org, doc_id))["teamName"] == "Team v3"
    await catalog.change(CatalogEntity.TEAM, {"teamId": team, "version": 4}, action="deleted")
    await catalog.change(CatalogEntity.TEAM, {"teamId": team, "name": "Team v2", "version": 2})
    assert "teamName" not in await item(org, doc_id)
    assert [v["value"] for v in (await facets(org))["team"]] == []  # only the other team, with nothing

    await catalog.change(CatalogEntity.TEAM, {"teamId": other, "version": 2}, action="deleted")
    assert "team" not in await facets(org)  # no Teams left: no Team facet


async def test_a_member_converges_to_the_newest_role_and_a_deletion_sticks(
    org: Org, js: JetStreamContext, migrated: Infrastructure, services: RunningServices
) -> None:
    catalog = Catalog(js, migrated, org.id)
    user = f"upstream-user-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(
        base_url=services.base_url,
        timeout=30,
        headers={"Authorization": f"Bearer {issue_token(user, services.secret)}", "X-Scope-Slug": org.slug},
    ) as client:
        assert (await client.get("/api/memory")).status_code == 404  # not a member yet

        newest = await catalog.change(CatalogEntity.MEMBER, {"userId": user, "role": "admin", "version": 2})
        await catalog.change(CatalogEntity.MEMBER, {"userId": user, "role": "member", "version": 1})
        await catalog.redeliver(CatalogEntity.MEMBER, newest, {"userId": user, "role": "admin", "version": 2})
        assert (await client.get("/api/memory")).status_code == 200
        write = await client.post("/api/memory/documents", json={"title": "An admin's note"})
        assert write.status_code == 202, write.text  # still admin: the late v1 "member" changed nothing

        await catalog.change(CatalogEntity.MEMBER, {"userId": user, "role": "member", "version": 3})
        demoted = await client.post("/api/memory/documents", json={"title": "A member's note"})
        assert demoted.status_code == 403, demoted.text

        await catalog.change(CatalogEntity.MEMBER, {"userId": user, "version": 4}, action="deleted")
        await catalog.change(CatalogEntity.MEMBER, {"userId": user, "role": "admin", "version": 2})  # late
        for response in (
            await client.get("/api/memory"),
            await client.get("/api/memory/stats"),
            await client.post("/api/memory/documents", json={"title": "A former member's note"}),
        ):
            assert response.status_code == 404, response.text
            assert response.headers["content-type"].startswith("application/problem+json")


async def test_cortex_ingest_warns_of_a_work_its_catalog_does_not_hold(
    org: Org, js: JetStreamContext, migrated: Infrastructure, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped `--work` was published without a word (QA 38); it is still published: the catalog may lag."""
    known, typo = uuid.uuid4(), uuid.uuid4()
    await publish_catalog(js, org.id, CatalogEntity.WORK, {"workId": str(known), "title": "Billing", "version": 1})
    note = tmp_path / "plan.md"
    note.write_text("# Plan\n\nShip it.")

    async with asyncio.timeout(30):  # the catalog is a read copy: it follows the events
        while True:
            assert await cli(migrated, ["ingest", str(note), "--org", org.slug, "--work", str(known)]) == 0
            if "warning" not in capsys.readouterr().err:
                break
            await asyncio.sleep(0.2)
    assert await cli(migrated, ["ingest", str(note), "--org", org.slug, "--work", str(typo)]) == 0
    out, err = capsys.readouterr()
    assert f"warning: {org.slug} has no Work {typo} in its catalog" in err
    assert f"published 1 file(s) for {org.slug}" in out
