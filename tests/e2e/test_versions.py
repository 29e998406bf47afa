"""The highest version wins: late older events, duplicates and deletions are handled exactly once."""

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts import subjects
from cortex_indexer.repository import inbox_key
from cortex_messaging.publisher import publish_event
from cortex_messaging.trace_headers import inject
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import org_transaction
from tests.conftest import Org
from tests.events import IndexedWatcher, delete_event, publish_delete, publish_upsert, search_ids, upsert_event
from tests.infrastructure import Infrastructure
from tests.spans import new_trace, wait_handled

pytestmark = pytest.mark.e2e

CONSUMER = "indexer-kb"


Db = async_sessionmaker[AsyncSession]


@pytest.fixture(scope="module")
async def db(migrated: Infrastructure) -> AsyncIterator[Db]:
    """The owner's connection; each read binds the test's organization, as row-level security wants."""
    engine = make_engine(migrated.database_url, pool_size=2)
    yield make_sessionmaker(engine)
    await engine.dispose()


async def document_row(db: Db, org_id: uuid.UUID, document_id: uuid.UUID) -> Any:
    async with org_transaction(db, org_id) as session:
        result = await session.execute(
            text("SELECT version, title, body, deleted_at, last_indexed_at FROM kb_documents WHERE id = :id"),
            {"id": document_id},
        )
        return result.one()


async def chunks(db: Db, org_id: uuid.UUID, document_id: uuid.UUID) -> list[tuple[int, str]]:
    async with org_transaction(db, org_id) as session:
        result = await session.execute(
            text("SELECT id, text FROM kb_chunks WHERE document_id = :id ORDER BY ordinal"), {"id": document_id}
        )
        return [(row.id, row.text) for row in result]


async def times_processed(db: Db, org_id: uuid.UUID, event_id: str) -> int:
    async with db() as session:
        result = await session.execute(
            text("SELECT count(*) FROM processed_events WHERE consumer = :consumer AND event_id = :id"),
            {"consumer": CONSUMER, "id": inbox_key(org_id, event_id)},
        )
        return int(result.scalar_one())


def word(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


async def search(client: httpx.AsyncClient, q: str | None = None) -> httpx.Response:
    response = await client.get("/api/memory", params={"q": q} if q else {})
    assert response.status_code == 200, response.text
    return response


async def test_an_older_version_arriving_after_a_newer_one_changes_nothing(
    org: Org, js: JetStreamContext, nats_client: NATS, spans: InMemorySpanExporter, db: Db
) -> None:
    document, new, old = uuid.uuid4(), word("newer"), word("older")
    watcher = await IndexedWatcher().start(nats_client, org.id)
    await publish_upsert(js, upsert_event(org.id, document, title=f"Handbook {new}", body=f"Rules {new}.", version=2))
    await watcher.wait_for(document, 2)
    before = await document_row(db, org.id, document)

    v1 = upsert_event(org.id, document, title=f"Handbook {old}", body=f"Rules {old}.", version=1)
    with new_trace("test: late older version") as trace_id:
        await publish_upsert(js, v1)
    await wait_handled(spans, trace_id)  # the indexer has seen and settled v1
    await watcher.drain()

    assert watcher.count(document, 1) == 0
    after = await document_row(db, org.id, document)
    assert (after.version, after.title, after.last_indexed_at) == (2, f"Handbook {new}", before.last_indexed_at)
    assert all(old not in chunk_text for _, chunk_text in await chunks(db, org.id, document))
    found = await search(org.member, new)
    assert [(item["id"], item["title"]) for item in found.json()["items"]] == [(str(document), f"Handbook {new}")]
    assert new in found.json()["items"][0]["snippet"]
    for response in (await search(org.member, old), await search(org.member)):
        assert old not in response.text
    assert [item["id"] for item in (await search(org.member)).json()["items"]] == [str(document)]


async def test_the_same_event_delivered_twice_is_indexed_once(
    org: Org, js: JetStreamContext, nats_client: NATS, spans: InMemorySpanExporter, db: Db
) -> None:
    document = uuid.uuid4()
    body = "\n\n".join(f"# Part {i}\n\nParagraph {i} about {word('dup')}." for i in range(3))
    event = upsert_event(org.id, document, title="Twice", body=body, version=1)
    subject = subjects.kb_document_upserted(org.id)
    watcher = await IndexedWatcher().start(nats_client, org.id)
    first = await publish_event(js, subject, event)
    assert not first.duplicate
    await watcher.wait_for(document, 1)
    stored_chunks = await chunks(db, org.id, document)
    before = await document_row(db, org.id, document)
    assert len(stored_chunks) == 3

    # Within the duplicate window JetStream itself drops the copy (same Nats-Msg-Id) ...
    assert (await publish_event(js, subject, event)).duplicate
    # ... beyond it (here: another Nats-Msg-Id), the copy reaches the indexer, which must ignore it.
    with new_trace("test: redelivered copy") as trace_id:
        replay = await js.publish(subject, event.to_wire(), headers=inject({"Nats-Msg-Id": f"replay-{uuid.uuid4()}"}))
    assert not replay.duplicate
    await wait_handled(spans, trace_id)
    await watcher.drain()

    assert watcher.count(document, 1) == 1
    assert await chunks(db, org.id, document) == stored_chunks  # same rows, not rewritten
    assert (await document_row(db, org.id, document)).last_indexed_at == before.last_indexed_at
    assert await times_processed(db, org.id, event.id) == 1
    assert await search_ids(org.member) == [str(document)]


async def test_a_delete_removes_the_document_and_an_older_upsert_does_not_bring_it_back(
    org: Org, js: JetStreamContext, nats_client: NATS, spans: InMemorySpanExporter, db: Db
) -> None:
    doomed, keeper, secret, late = uuid.uuid4(), uuid.uuid4(), word("doomed"), word("zombie")
    watcher = await IndexedWatcher().start(nats_client, org.id)
    await publish_upsert(js, upsert_event(org.id, doomed, title=f"Old plan {secret}", body=f"{secret}.", version=1))
    await publish_upsert(js, upsert_event(org.id, keeper, title="Keeper", body="Stays.", version=1))
    await watcher.wait_for(doomed, 1)
    await watcher.wait_for(keeper, 1)
    assert set(await search_ids(org.member)) == {str(doomed), str(keeper)}

    await publish_delete(js, delete_event(org.id, doomed, version=2))
    deleted = await watcher.wait_for(doomed, 2)

    assert deleted["deleted"] is True
    assert deleted["chunks"] == 0
    for response in (await search(org.member), await search(org.member, secret)):
        assert str(doomed) not in response.text
        assert secret not in response.text
    assert await search_ids(org.member) == [str(keeper)]
    assert await chunks(db, org.id, doomed) == []

    # A late upsert older than the deletion changes nothing.
    with new_trace("test: late upsert after delete") as trace_id:
        await publish_upsert(js, upsert_event(org.id, doomed, title=f"Back {late}", body=f"{late}.", version=1))
    await wait_handled(spans, trace_id)

    for response in (await search(org.member), await search(org.member, late)):
        assert str(doomed) not in response.text
        assert late not in response.text
    assert await search_ids(org.member) == [str(keeper)]
    row = await document_row(db, org.id, doomed)
    assert row.deleted_at is not None
    assert row.version == 2
    assert await chunks(db, org.id, doomed) == []

    # A newer version does bring it back.
    await publish_upsert(js, upsert_event(org.id, doomed, title=f"New plan {late}", body=f"{late}.", version=3))
    await watcher.wait_for(doomed, 3)
    await watcher.stop()
    assert set(await search_ids(org.member)) == {str(doomed), str(keeper)}


async def test_a_delete_arriving_first_keeps_an_older_upsert_out(
    org: Org, js: JetStreamContext, nats_client: NATS, spans: InMemorySpanExporter
) -> None:
    document = uuid.uuid4()
    watcher = await IndexedWatcher().start(nats_client, org.id)
    await publish_delete(js, delete_event(org.id, document, version=5))
    assert (await watcher.wait_for(document, 5))["deleted"] is True
    await watcher.stop()

    with new_trace("test: upsert older than an earlier delete") as trace_id:
        await publish_upsert(js, upsert_event(org.id, document, title="Never", body="Shown.", version=4))
    await wait_handled(spans, trace_id)

    assert await search_ids(org.member) == []
    assert await search_ids(org.member, "never shown") == []
