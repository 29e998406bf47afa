"""The org feed with its catalog: Works, Missions and Teams on items, filters, and disjunctive facets."""

import asyncio
import uuid
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_contracts.catalog import CatalogEntity
from tests.catalog_events import publish_catalog
from tests.conftest import Org
from tests.events import IndexedWatcher, publish_upsert, upsert_event

pytestmark = pytest.mark.e2e


async def _eventually(check: Any, timeout: float = 20) -> Any:
    async with asyncio.timeout(timeout):
        while True:
            result = await check()
            if result:
                return result
            await asyncio.sleep(0.2)


async def test_items_carry_catalog_titles_and_facets_are_disjunctive(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    mission, team, work_a, work_b = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await publish_catalog(
        js, org.id, CatalogEntity.MISSION, {"missionId": str(mission), "title": "Launch", "version": 1}
    )
    await publish_catalog(js, org.id, CatalogEntity.TEAM, {"teamId": str(team), "name": "Platform", "version": 1})
    for work, title in ((work_a, "Billing"), (work_b, "Search")):
        await publish_catalog(
            js,
            org.id,
            CatalogEntity.WORK,
            {"workId": str(work), "title": title, "missionId": str(mission), "version": 1},
        )
    await publish_catalog(
        js,
        org.id,
        CatalogEntity.TEAM_RESOURCE,
        {"teamId": str(team), "resourceType": "work", "resourceId": str(work_a), "version": 1},
    )
    watcher = await IndexedWatcher().start(nats_client, org.id)
    docs = [
        (uuid.uuid4(), work_a, "spec", ["alpha"]),
        (uuid.uuid4(), work_a, "runbook", ["alpha", "beta"]),
        (uuid.uuid4(), work_b, "spec", ["beta"]),
    ]
    for doc_id, work, doc_class, tags in docs:
        await publish_upsert(
            js,
            upsert_event(
                org.id,
                doc_id,
                title=f"{doc_class} doc",
                body="text",
                version=1,
                workId=str(work),
                docClass=doc_class,
                tags=tags,
            ),
        )
    for doc_id, *_ in docs:
        await watcher.wait_for(doc_id, 1)
    await watcher.stop()

    async def titled() -> list[dict[str, Any]] | None:
        items = (await org.member.get("/api/memory")).json()["items"]
        return items if all(i.get("teamName") or i["workId"] != str(work_a) for i in items) else None

    items = {i["id"]: i for i in await _eventually(titled)}
    first = items[str(docs[0][0])]
    assert (first["workTitle"], first["missionTitle"], first["teamName"]) == ("Billing", "Launch", "Platform")
    assert items[str(docs[2][0])]["workTitle"] == "Search"
    assert "teamName" not in items[str(docs[2][0])]

    response = await org.member.get("/api/memory/facets", params={"type": "spec"})
    assert response.status_code == 200, response.text
    facets = response.json()
    counts = {facet: {v["value"]: v["count"] for v in values} for facet, values in facets.items()}
    assert counts["type"] == {"spec": 2, "runbook": 1}  # its own filter is ignored: siblings stay visible
    assert counts["work"] == {str(work_a): 1, str(work_b): 1}
    assert counts["mission"] == {str(mission): 2}
    assert counts["team"] == {str(team): 1}
    assert counts["tag"] == {"alpha": 1, "beta": 1}

    filtered = (await org.member.get("/api/memory", params={"type": "spec", "team": str(team)})).json()["items"]
    assert [i["id"] for i in filtered] == [str(docs[0][0])]
    stats = (await org.member.get("/api/memory/stats")).json()
    assert stats["documentsIndexed"] == 3 and stats["worksCovered"] == 2
