"""`GET /api/memory/documents/{id}`: one item in full — body, metadata, provenance, citations both ways.

Provenance ids are only ever of the active organization: a citation of another organization's document
(or from one) never shows that document.
"""

import uuid
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import ObjectStoreConfig
from nats.js.errors import BucketNotFoundError

from cortex_aggregator import items
from cortex_aggregator.detail import item_detail
from cortex_contracts.catalog import CatalogEntity
from cortex_contracts.envelope import Envelope
from cortex_contracts.rpc import ItemRequest
from cortex_contracts.uploads import upload_document_id
from cortex_store.database import make_engine, make_sessionmaker
from tests.catalog_events import publish_catalog
from tests.conftest import Org, OrgFactory
from tests.events import (
    IndexedWatcher,
    delete_event,
    publish_delete,
    publish_upload,
    upload_event,
    upsert_and_wait,
    upsert_event,
)
from tests.infrastructure import Infrastructure
from tests.processed import CATALOG_CONSUMER, inbox_keys, wait_processed

pytestmark = pytest.mark.e2e

UPLOAD_BUCKET = "cortex-uploads"


async def index(js: JetStreamContext, nats_client: NATS, org: Org, *events: Envelope) -> None:
    await upsert_and_wait(js, nats_client, org.id, *events)


async def detail(org: Org, doc_id: uuid.UUID) -> dict[str, Any]:
    response = await org.member.get(f"/api/memory/documents/{doc_id}")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


async def test_detail_has_the_full_body_metadata_and_catalog_provenance(
    org: Org, js: JetStreamContext, nats_client: NATS, migrated: Infrastructure
) -> None:
    mission, work, platform, search = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    events = [
        await publish_catalog(
            js, org.id, CatalogEntity.MISSION, {"missionId": str(mission), "title": "Launch", "version": 1}
        ),
        await publish_catalog(
            js,
            org.id,
            CatalogEntity.WORK,
            {"workId": str(work), "title": "Billing", "missionId": str(mission), "version": 1},
        ),
    ]
    for team, name in ((platform, "Platform"), (search, "Search")):
        events.append(
            await publish_catalog(js, org.id, CatalogEntity.TEAM, {"teamId": str(team), "name": name, "version": 1})
        )
        events.append(
            await publish_catalog(
                js,
                org.id,
                CatalogEntity.TEAM_RESOURCE,
                {"teamId": str(team), "resourceType": "work", "resourceId": str(work), "version": 1},
            )
        )
    await wait_processed(migrated.database_url, CATALOG_CONSUMER, inbox_keys(org.id, events))
    doc_id = uuid.uuid4()
    body = "# Billing runbook\n\n" + "\n\n".join(f"Step {n}: check the ledger entry {n} twice." for n in range(200))
    await index(
        js,
        nats_client,
        org,
        upsert_event(
            org.id,
            doc_id,
            title="Billing runbook",
            body=body,
            version=3,
            workId=str(work),
            docClass="runbook",
            status="draft",
            tags=["billing", "ops"],
            source="wiki",
        ),
    )

    found = await detail(org, doc_id)
    assert found["body"] == body  # in full, not the feed's snippet
    assert len(found["item"]["snippet"]) < len(body)
    assert (found["status"], found["tags"], found["version"]) == ("draft", ["billing", "ops"], 3)
    item = found["item"]
    assert (item["id"], item["title"], item["docClass"], item["source"], item["kind"]) == (
        str(doc_id),
        "Billing runbook",
        "runbook",
        "wiki",
        "document",
    )
    provenance = found["provenance"]
    assert provenance["work"] == {"id": str(work), "title": "Billing"}
    assert provenance["mission"] == {"id": str(mission), "title": "Launch"}
    assert provenance["teams"] == [{"id": str(platform), "title": "Platform"}, {"id": str(search), "title": "Search"}]
    assert (found["cites"], found["citedBy"]) == ([], [])

    # Gone once deleted; and an id that never existed is the same 404.
    await publish_delete(js, delete_event(org.id, doc_id, version=4))
    watcher = await IndexedWatcher().start(nats_client, org.id)
    try:
        await watcher.wait_for(doc_id, 4)
    finally:
        await watcher.stop()
    for missing in (doc_id, uuid.uuid4()):
        response = await org.member.get(f"/api/memory/documents/{missing}")
        assert response.status_code == 404, response.text
        assert response.headers["content-type"].startswith("application/problem+json")


async def _upload(js: JetStreamContext, org: Org, content: bytes, filename: str) -> uuid.UUID:
    """Put a file in the Object Store and announce it, as the upload service would."""
    upload_id = uuid.uuid4()
    try:
        store = await js.object_store(UPLOAD_BUCKET)
    except BucketNotFoundError:
        store = await js.create_object_store(UPLOAD_BUCKET, ObjectStoreConfig(description="Uploaded files"))
    name = f"{org.id}/{upload_id}/{filename}"
    await store.put(name, content)
    event = upload_event(org.id, upload_id, filename=filename, size=len(content), bucket=UPLOAD_BUCKET, name=name)
    await publish_upload(js, event)
    return upload_id


async def test_detail_shows_the_upload_a_document_came_from(org: Org, js: JetStreamContext, nats_client: NATS) -> None:
    content = b"Quarterly figures: revenue rose, costs fell.\n"
    watcher = await IndexedWatcher().start(nats_client, org.id)
    try:
        upload_id = await _upload(js, org, content, "figures.txt")
        await watcher.wait_for(upload_document_id(upload_id), 1)
    finally:
        await watcher.stop()
    upload_ref = {"id": str(upload_id), "filename": "figures.txt", "mediaType": "text/plain", "sizeBytes": len(content)}

    # The document the indexer extracted from the file ...
    extracted = await detail(org, upload_document_id(upload_id))
    assert extracted["provenance"]["upload"] == upload_ref
    assert "revenue rose" in extracted["body"]
    # ... and a document an upstream extractor made from it and published itself.
    summary_id = uuid.uuid4()
    await index(
        js,
        nats_client,
        org,
        upsert_event(org.id, summary_id, title="Figures, summarised", body="Up.", version=1, uploadId=str(upload_id)),
    )
    assert (await detail(org, summary_id))["provenance"]["upload"] == upload_ref


async def test_detail_shows_the_agent_run_that_wrote_a_document(
    org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    doc_id = uuid.uuid4()
    await index(
        js,
        nats_client,
        org,
        upsert_event(
            org.id, doc_id, title="Agent report", body="Findings.", version=1, agentId="scout", agentRunId="run-42"
        ),
    )
    found = await detail(org, doc_id)
    assert (found["provenance"].get("agentId"), found["provenance"].get("agentRunId")) == ("scout", "run-42")
    assert (found["item"].get("agentId"), found["item"].get("agentRunId")) == ("scout", "run-42")
    feed_item = next(i for i in (await org.member.get("/api/memory")).json()["items"] if i["id"] == str(doc_id))
    assert (feed_item.get("agentId"), feed_item.get("agentRunId")) == ("scout", "run-42")


async def test_citations_both_ways_stay_inside_the_organization(
    make_org: OrgFactory, js: JetStreamContext, nats_client: NATS
) -> None:
    a, b = await make_org(), await make_org()
    b_doc, b_citer = uuid.uuid4(), uuid.uuid4()
    await index(js, nats_client, b, upsert_event(b.id, b_doc, title="B's secret memo", body="B only.", version=1))
    cited, also_cited, citing, citer = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    await index(
        js,
        nats_client,
        a,
        upsert_event(a.id, cited, title="Alpha source", body="Source text.", version=1),
        upsert_event(a.id, also_cited, title="Beta source", body="More source text.", version=1),
        upsert_event(
            a.id,
            citing,
            title="Synthesis",
            body="Built on the sources.",
            version=1,
            cites=[str(also_cited), str(cited), str(b_doc), str(uuid.uuid4())],
        ),
        upsert_event(a.id, citer, title="Review of the synthesis", body="It holds.", version=1, cites=[str(citing)]),
    )
    # B's document cites A's: that must not show up on A's side either.
    await index(
        js, nats_client, b, upsert_event(b.id, b_citer, title="B cites A", body="x", version=1, cites=[str(citing)])
    )

    found = await detail(a, citing)
    assert found["cites"] == [
        {"id": str(cited), "title": "Alpha source"},
        {"id": str(also_cited), "title": "Beta source"},
    ]
    assert found["citedBy"] == [{"id": str(citer), "title": "Review of the synthesis"}]
    assert (await detail(a, cited))["citedBy"] == [{"id": str(citing), "title": "Synthesis"}]
    response = await a.member.get(f"/api/memory/documents/{citing}")
    for secret in (str(b_doc), str(b_citer), "B's secret memo", "B cites A"):
        assert secret not in response.text
    # B sees its own citation only as far as its own documents go: A's document is not there.
    assert (await detail(b, b_citer))["cites"] == []

    # A new version that drops a citation drops it from both sides.
    await index(
        js, nats_client, a, upsert_event(a.id, citing, title="Synthesis", body="v2", version=2, cites=[str(cited)])
    )
    assert [ref["id"] for ref in (await detail(a, citing))["cites"]] == [str(cited)]
    assert (await detail(a, also_cited))["citedBy"] == []


async def test_detail_reads_one_version_even_when_a_newer_one_commits_while_it_reads(
    org: Org, js: JetStreamContext, nats_client: NATS, migrated: Infrastructure, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The detail's title comes from one statement, its body and version from another: the indexer commits
    version 2 between them here, and the detail must still be all version 1, as of its one snapshot."""
    doc_id = uuid.uuid4()
    await index(js, nats_client, org, upsert_event(org.id, doc_id, title="Draft", body="The first text.", version=1))
    read_rows = items.rows_by_id

    async def rows_then_version_2_commits(*args: Any, **kwargs: Any) -> Any:
        rows = await read_rows(*args, **kwargs)
        await index(js, nats_client, org, upsert_event(org.id, doc_id, title="Final", body="The last text.", version=2))
        return rows

    # (the session's aggregator runs in this process: the patch is undone before it answers over HTTP)
    monkeypatch.setattr(items, "rows_by_id", rows_then_version_2_commits)
    engine = make_engine(migrated.app_database_url)
    try:
        found = await item_detail(make_sessionmaker(engine), ItemRequest(organization_id=org.id, document_id=doc_id))
    finally:
        await engine.dispose()
        monkeypatch.undo()

    assert (found.item.title, found.body, found.version) == ("Draft", "The first text.", 1)
    assert (await detail(org, doc_id))["version"] == 2  # it did commit meanwhile
