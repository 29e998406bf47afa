"""The org feed with its catalog: Works, Missions and Teams on items, filters, and disjunctive facets."""

import asyncio
import uuid
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from cortex_aggregator.facet_indexes import FacetIndexes
from cortex_aggregator.facets import facets
from cortex_aggregator.lexical_indexes import LexicalIndexes
from cortex_contracts.catalog import CatalogEntity
from cortex_contracts.rpc import FacetsRequest, FeedFilters
from cortex_store.database import make_engine, make_sessionmaker
from tests.catalog_events import publish_catalog
from tests.conftest import Org, OrgFactory
from tests.events import IndexedWatcher, delete_event, publish_delete, publish_upsert, upsert_event
from tests.infrastructure import Infrastructure

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


async def test_the_tag_filter_follows_tags_as_they_change_and_documents_are_deleted(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    """The tag filter reads kb_document_tags, which the indexer rewrites with every version."""
    first, second = uuid.uuid4(), uuid.uuid4()

    async def index(doc_id: uuid.UUID, version: int, tags: list[str] | None) -> None:
        watcher = await IndexedWatcher().start(nats_client, org.id)
        try:
            if tags is None:
                await publish_delete(js, delete_event(org.id, doc_id, version=version))
            else:
                event = upsert_event(org.id, doc_id, title="doc", body="text", version=version, tags=tags)
                await publish_upsert(js, event)
            await watcher.wait_for(doc_id, version)
        finally:
            await watcher.stop()

    async def tagged(tag: str) -> set[str]:
        response = await org.member.get("/api/memory", params={"tag": tag})
        assert response.status_code == 200, response.text
        return {item["id"] for item in response.json()["items"]}

    async def tag_counts(**filters: str) -> dict[str, int]:
        response = await org.member.get("/api/memory/facets", params=filters)
        assert response.status_code == 200, response.text
        return {chip["value"]: chip["count"] for chip in response.json()["tag"]}

    await index(first, 1, ["alpha", "beta", "alpha"])
    await index(second, 1, ["beta"])
    assert await tagged("alpha") == {str(first)}
    assert await tagged("beta") == {str(first), str(second)}
    assert await tag_counts() == {"alpha": 1, "beta": 2}

    await index(first, 2, ["gamma"])  # alpha and beta dropped, gamma added
    assert await tagged("alpha") == set()
    assert await tagged("beta") == {str(second)}
    assert await tagged("gamma") == {str(first)}
    assert await tag_counts(tag="alpha") == {"alpha": 0, "beta": 1, "gamma": 1}

    await index(second, 2, None)  # deleted
    assert await tagged("beta") == set()
    assert await tag_counts() == {"gamma": 1}

    await index(second, 3, ["beta", "delta"])  # upserted again, newer than its tombstone
    assert await tagged("beta") == {str(second)}
    assert await tagged("delta") == {str(second)}
    assert await tag_counts(tag="delta") == {"beta": 1, "delta": 1, "gamma": 1}


async def test_mission_and_team_facets_are_absent_until_the_org_has_them(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    watcher = await IndexedWatcher().start(nats_client, org.id)
    doc = uuid.uuid4()
    await publish_upsert(js, upsert_event(org.id, doc, title="Plain", body="A note with no Work.", version=1))
    await watcher.wait_for(doc, 1)
    await watcher.stop()

    facets = (await org.member.get("/api/memory/facets")).json()
    assert {"type", "work", "source", "status", "tag"} <= set(facets)
    assert "mission" not in facets
    assert "team" not in facets

    await publish_catalog(js, org.id, CatalogEntity.TEAM, {"teamId": str(uuid.uuid4()), "name": "Ops", "version": 1})
    for _ in range(100):  # the catalog event is applied asynchronously
        facets = (await org.member.get("/api/memory/facets")).json()
        if "team" in facets:
            break
        await asyncio.sleep(0.1)
    assert "team" in facets
    assert "mission" not in facets  # no Work has a Mission yet


async def test_the_work_facet_and_stats_count_every_work_documents_name(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    """As the Work filter matches them. Before (QA 30), a Work the catalog did not hold (yet: upstream sent its
    documents first; or any more: deleted) was left out of the facet and the stats while `work=<id>` listed
    its documents, and the facet showed that selected Work with count 0."""
    known, unknown = uuid.uuid4(), uuid.uuid4()  # only the first is in the catalog
    await publish_catalog(js, org.id, CatalogEntity.WORK, {"workId": str(known), "title": "Billing", "version": 1})
    watcher = await IndexedWatcher().start(nats_client, org.id)
    documents = {uuid.uuid4(): known, uuid.uuid4(): unknown, uuid.uuid4(): unknown}
    for document, work in documents.items():
        event = upsert_event(org.id, document, title="doc", body="text", version=1, workId=str(work))
        await publish_upsert(js, event)
    for document in documents:
        await watcher.wait_for(document, 1)
    await watcher.stop()

    async def work_facet() -> dict[str, tuple[str, int]] | None:
        values = (await org.member.get("/api/memory/facets")).json()["work"]
        facet = {v["value"]: (v["label"], v["count"]) for v in values}
        # The catalog's own consumer may apply the Work's title after its documents are indexed.
        return facet if len(facet) == 2 and facet.get(str(known), ("",))[0] == "Billing" else None

    assert await _eventually(work_facet) == {str(known): ("Billing", 1), str(unknown): (str(unknown), 2)}
    selected = (await org.member.get("/api/memory/facets", params={"work": str(unknown)})).json()["work"]
    listed = (await org.member.get("/api/memory", params={"work": str(unknown)})).json()["items"]
    assert {v["value"]: v["count"] for v in selected}[str(unknown)] == len(listed) == 2
    stats = (await org.member.get("/api/memory/stats")).json()
    assert (stats["documentsIndexed"], stats["worksCovered"]) == (3, 2)


async def test_a_tag_spelt_with_a_combining_accent_or_in_capitals_is_the_same_tag(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    """Before (QA 30): "café" with é and with e + U+0301 were two facet values, and a filter found one; so
    were "Café" and "café" (two Works' KBs spelling one tag two ways)."""
    composed, decomposed, capital = "caf\u00e9", "cafe\u0301", "CAF\u00c9"
    watcher = await IndexedWatcher().start(nats_client, org.id)
    documents = {uuid.uuid4(): composed, uuid.uuid4(): decomposed, uuid.uuid4(): capital}
    for document, tag in documents.items():
        await publish_upsert(js, upsert_event(org.id, document, title="doc", body="text", version=1, tags=[tag]))
    for document in documents:
        await watcher.wait_for(document, 1)
    await watcher.stop()

    tags = (await org.member.get("/api/memory/facets")).json()["tag"]
    assert [(v["value"], v["count"]) for v in tags] == [(composed, 3)]
    for spelling in (composed, decomposed, capital, "Cafe\u0301", f"  {composed} "):
        listed = (await org.member.get("/api/memory", params={"tag": spelling})).json()["items"]
        assert {item["id"] for item in listed} == {str(document) for document in documents}


async def test_a_class_in_capitals_is_the_same_class(org: Org, js: JetStreamContext, nats_client: NATS) -> None:
    """Before (QA 47): "Runbook" and "runbook" were two Type values, both labelled Runbook; `type=RUNBOOK`
    found neither."""
    watcher = await IndexedWatcher().start(nats_client, org.id)
    documents = {uuid.uuid4(): "Runbook", uuid.uuid4(): "runbook", uuid.uuid4(): " RUNBOOK "}
    for document, doc_class in documents.items():
        event = upsert_event(org.id, document, title="doc", body="text", version=1, docClass=doc_class)
        await publish_upsert(js, event)
    for document in documents:
        await watcher.wait_for(document, 1)
    await watcher.stop()

    types = (await org.member.get("/api/memory/facets")).json()["type"]
    assert [(v["value"], v["label"], v["count"]) for v in types] == [("runbook", "Runbook", 3)]
    for spelling in ("runbook", "RUNBOOK", "Runbook "):
        listed = (await org.member.get("/api/memory", params={"type": spelling})).json()["items"]
        assert {item["id"] for item in listed} == {str(document) for document in documents}
    note = await org.admin.post("/api/memory/documents", json={"title": "Restart", "docClass": "Runbook"})
    assert note.status_code == 202, note.text  # before: 422, "docClass must be one of spec, design, …"


async def test_facets_with_a_search_text_count_only_the_documents_that_contain_its_words(
    org: Org, js: JetStreamContext, nats_client: NATS, migrated: Infrastructure
) -> None:
    docs = [
        (uuid.uuid4(), "spec", "alpha", "Pricing tiers of the annual plans."),
        (uuid.uuid4(), "runbook", "alpha", "How we priced the migration."),  # "priced", as "pricing": price
        (uuid.uuid4(), "spec", "beta", "Deploying the search cluster."),
        (uuid.uuid4(), "runbook", "beta", "Rotating database credentials."),
    ]
    watcher = await IndexedWatcher().start(nats_client, org.id)
    for doc_id, doc_class, tag, body in docs:
        event = upsert_event(org.id, doc_id, title="Note", body=body, version=1, docClass=doc_class, tags=[tag])
        await publish_upsert(js, event)
    for doc_id, *_ in docs:
        await watcher.wait_for(doc_id, 1)
    await watcher.stop()

    async def counts(**params: str) -> dict[str, dict[str, int]]:
        response = await org.member.get("/api/memory/facets", params=params)
        assert response.status_code == 200, response.text
        return {facet: {v["value"]: v["count"] for v in values} for facet, values in response.json().items()}

    everything = await counts()
    assert (everything["type"], everything["tag"]) == ({"spec": 2, "runbook": 2}, {"alpha": 2, "beta": 2})
    assert await counts(q="  ") == everything  # blank: no search, as in the feed

    # Before, `q` was refused as an unknown parameter: the counts could not follow a search.
    pricing = await counts(q="pricing")
    assert (pricing["type"], pricing["tag"]) == ({"spec": 1, "runbook": 1}, {"alpha": 2})
    found = (await org.member.get("/api/memory", params={"q": "pricing", "mode": "lexical"})).json()["items"]
    assert {item["id"] for item in found} == {str(docs[0][0]), str(docs[1][0])}

    # Still disjunctive: the type facet ignores its own filter, the others honour it (and the search).
    spec = await counts(q="pricing", type="spec")
    assert (spec["type"], spec["tag"]) == ({"spec": 1, "runbook": 1}, {"alpha": 1})
    either = await counts(q="pricing clusters")  # any of its words
    assert either["tag"] == {"alpha": 2, "beta": 1}
    stop_words = await counts(q="the of", type="spec")  # no word the lexical leg keeps: nothing matches
    assert (stop_words["type"], stop_words["tag"]) == ({"spec": 0}, {})

    # In the aggregator, a search text's documents come from the BM25 index in memory once it is loaded, else
    # from PostgreSQL's postings: both ways count the same.
    engine = make_engine(migrated.app_database_url, pool_size=2)
    try:
        sessions = make_sessionmaker(engine)
        indexes, lexical = FacetIndexes(sessions), LexicalIndexes(sessions)
        await lexical.wait_loaded(org.id)
        for q, filters in [("pricing", {}), ("pricing", {"type": ["spec"]}), ("pricing clusters", {}), ("the", {})]:
            request = FacetsRequest(organization_id=org.id, q=q, filters=FeedFilters.model_validate(filters))
            assert await lexical.matching(org.id, q) is not None  # (the index is loaded: the memory path runs)
            assert await facets(indexes, lexical, request) == await facets(indexes, None, request), (q, filters)
    finally:
        await engine.dispose()


async def test_every_value_of_a_facet_pages_in_the_overviews_order_with_its_counts(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    """`/facets` shows a facet's 100 largest; `/facets/{facet}` pages through all of them."""
    docs = [uuid.uuid4() for _ in range(5)]
    watcher = await IndexedWatcher().start(nats_client, org.id)
    for n, doc_id in enumerate(docs):
        own = [f"t{n}-{k:02}" for k in range(30)]
        tags = [*own, "shared", *(["pair"] if n < 2 else [])]
        doc_class = "spec" if n < 2 else "runbook"
        event = upsert_event(org.id, doc_id, title="Note", body="Body.", version=1, docClass=doc_class, tags=tags)
        await publish_upsert(js, event)
    for doc_id in docs:
        await watcher.wait_for(doc_id, 1)
    await watcher.stop()

    async def pages(limit: int, **params: str) -> list[list[tuple[str, int]]]:
        found, cursor = [], None
        while True:
            query = {**params, "limit": str(limit), **({"cursor": cursor} if cursor else {})}
            response = await org.member.get("/api/memory/facets/tag", params=query)
            assert response.status_code == 200, response.text
            page = response.json()
            assert page["facet"] == "tag"
            found.append([(v["value"], v["count"]) for v in page["values"]])
            if (cursor := page.get("nextCursor")) is None:
                return found

    def joined(paged: list[list[tuple[str, int]]]) -> list[tuple[str, int]]:
        return [value for page in paged for value in page]

    every = sorted(f"t{n}-{k:02}" for n in range(5) for k in range(30))
    paged = await pages(40)
    assert [len(page) for page in paged] == [40, 40, 40, 32]
    assert joined(paged) == [("shared", 5), ("pair", 2), *((tag, 1) for tag in every)]
    overview = (await org.member.get("/api/memory/facets")).json()["tag"]
    assert [(v["value"], v["count"]) for v in overview] == joined(paged)[:100]
    # A selected value ranked past the 100 still shows its count (QA 39: it showed 0).
    last = every[-1]
    selected = (await org.member.get("/api/memory/facets", params={"tag": last})).json()["tag"]
    assert [(v["value"], v["count"]) for v in selected] == [*joined(paged)[:100], (last, 1)]

    # The same disjunctive counts as the overview: other facets' filters count, the tag's own does not.
    specs = joined(await pages(1000, type="spec", tag="pair"))
    assert specs == [("pair", 2), ("shared", 2), *((tag, 1) for tag in every if tag < "t2")]
    assert joined(await pages(7, q="body", type="runbook")) == [
        ("shared", 3),
        *((tag, 1) for tag in every if tag >= "t2"),
    ]

    first = (await org.member.get("/api/memory/facets/tag", params={"limit": "3"})).json()
    other_query = await org.member.get("/api/memory/facets/tag", params={"cursor": first["nextCursor"], "type": "spec"})
    assert other_query.status_code == 400, other_query.text
    assert other_query.headers["content-type"] == "application/problem+json"
    forged = await org.member.get("/api/memory/facets/tag", params={"cursor": first["nextCursor"][:-2] + "xx"})
    assert forged.status_code == 400, forged.text
    for bad in ({"limit": "0"}, {"limit": "1001"}):
        assert (await org.member.get("/api/memory/facets/tag", params=bad)).status_code == 422
    assert (await org.member.get("/api/memory/facets/colour")).status_code == 422
    mission = (await org.member.get("/api/memory/facets/mission")).json()
    assert mission == {"facet": "mission", "values": []}  # the organization has no Missions


async def test_facet_values_tie_by_the_label_shown_and_long_labels_page_on(
    make_org: OrgFactory, js: JetStreamContext, nats_client: NATS
) -> None:
    """QA 39: `Zebra` came before `report` (shown as "Report"), and a cursor after a Work title of 300 CJK
    characters was longer than the endpoint took back."""
    org = await make_org()
    long_work, short_work = uuid.uuid4(), uuid.uuid4()
    await publish_catalog(js, org.id, CatalogEntity.WORK, {"workId": str(long_work), "title": "日" * 300, "version": 1})
    await publish_catalog(js, org.id, CatalogEntity.WORK, {"workId": str(short_work), "title": "W", "version": 1})
    docs = [
        (uuid.uuid4(), "Zebra", long_work, ["🎉" * 64]),
        (uuid.uuid4(), "report", long_work, ["🎉" * 64]),
        (uuid.uuid4(), "report", short_work, ["zz"]),
        (uuid.uuid4(), "Zebra", short_work, ["zz" + "🎉" * 62]),
    ]
    watcher = await IndexedWatcher().start(nats_client, org.id)
    for doc_id, doc_class, work, tags in docs:
        event = upsert_event(
            org.id, doc_id, title="N", body="B.", version=1, docClass=doc_class, workId=str(work), tags=tags
        )
        await publish_upsert(js, event)
    for doc_id, *_ in docs:
        await watcher.wait_for(doc_id, 1)
    await watcher.stop()

    types = (await org.member.get("/api/memory/facets")).json()["type"]
    assert [(v["label"], v["count"]) for v in types] == [("Report", 2), ("zebra", 2)]  # a class is lower-cased

    async def one_by_one(facet: str) -> list[str]:
        labels, cursor = [], None
        async with asyncio.timeout(30):
            while True:
                params = {"limit": "1", **({"cursor": cursor} if cursor else {})}
                response = await org.member.get(f"/api/memory/facets/{facet}", params=params)
                assert response.status_code == 200, response.text
                labels += [v["label"] for v in response.json()["values"]]
                if (cursor := response.json().get("nextCursor")) is None:
                    return labels

    assert await one_by_one("type") == ["Report", "zebra"]
    async with asyncio.timeout(30):  # the catalog is a read copy: it follows the events
        while await one_by_one("work") != ["W", "日" * 300]:
            await asyncio.sleep(0.2)
    assert await one_by_one("tag") == ["🎉" * 64, "zz", "zz" + "🎉" * 62]
