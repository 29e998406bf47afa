"""The indexer and aggregator with Qdrant as the vector store (CORTEX_PLUGIN_VECTOR_STORE=qdrant): events
on NATS become points in Qdrant, the dense leg searches them there, a deletion removes them, and a facet
filter still holds. Qdrant runs in local mode, which one process may open: both services run here, on a
NATS server of this test's own, beside the session's PostgreSQL.
"""

import asyncio
import contextlib
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from sqlalchemy import text

from cortex_aggregator.bootstrap import Aggregator
from cortex_aggregator.settings import AggregatorSettings
from cortex_cli.organizations import ensure_membership
from cortex_contracts.rpc import FeedFilters, FeedRequest, RetrievalMode
from cortex_contracts.vector_store import VectorChunk
from cortex_embedded_servers import free_port
from cortex_embedding.batcher import BatchingEmbedder
from cortex_indexer.bootstrap import Indexer
from cortex_indexer.settings import IndexerSettings
from cortex_store.database import make_engine
from cortex_store.models import MemberRole
from cortex_vector_stores.qdrant import QdrantVectorStore
from cortex_vector_stores.settings import QdrantSettings
from tests.events import IndexedWatcher, delete_event, publish_delete, publish_upsert, upsert_event
from tests.infrastructure import Infrastructure
from tests.own_nats import ask_feed, own_nats_client
from tests.services import SECRET, RunningServices, service_running

pytestmark = pytest.mark.e2e

DOCUMENTS = {
    "Pricing": ("decision", "Our enterprise plan costs 40 dollars per seat each month, billed yearly."),
    "Onboarding": ("runbook", "New engineers get a laptop, a mentor and access to the staging cluster."),
    "Incident review": ("decision", "The outage was caused by an expired TLS certificate on the gateway."),
}


@pytest.fixture
async def own_nats() -> AsyncIterator[NATS]:
    async with own_nats_client("tests-qdrant") as nc:
        yield nc


@contextlib.asynccontextmanager
async def qdrant_services(
    infra: Infrastructure, nc: NATS, services: RunningServices
) -> AsyncIterator[QdrantVectorStore]:
    """An indexer and an aggregator sharing one local-mode Qdrant store and the session's model."""
    assert nc.connected_url is not None and services.indexer.embedder and services.aggregator.embedder
    nats_url = nc.connected_url.geturl()
    with tempfile.TemporaryDirectory(prefix="cx-qdrant-", dir="/tmp") as scratch:
        store = QdrantVectorStore(QdrantSettings(path=Path(scratch)))
        indexer = Indexer(
            settings=IndexerSettings(database_url=infra.app_database_url, nats_url=nats_url, concurrency=4),
            embedder=BatchingEmbedder(services.indexer.embedder.embedder),
            vectors=store,
        )
        aggregator = Aggregator(
            settings=AggregatorSettings(database_url=infra.app_database_url, nats_url=nats_url, secret=SECRET),
            embedder=BatchingEmbedder(services.aggregator.embedder.embedder),
            vectors=store,
        )
        tasks = [asyncio.create_task(indexer.run()), asyncio.create_task(aggregator.run())]
        try:
            async with asyncio.timeout(60):
                await aggregator.ready.wait()
            yield store
        finally:
            indexer.stop.set()
            aggregator.stop.set()
            await asyncio.gather(*tasks)  # both close the store; closing twice is harmless


async def search(nc: NATS, org_id: uuid.UUID, q: str, **filters: list[str]) -> list[uuid.UUID]:
    request = FeedRequest(organization_id=org_id, q=q, mode=RetrievalMode.SEMANTIC, filters=FeedFilters(**filters))
    return [item.id for item in (await ask_feed(nc, request)).items]


async def first_column(infra: Infrastructure, statement: str, **params: Any) -> list[Any]:
    """The first column of a statement's rows, read as the database's owner (past row-level security)."""
    engine = make_engine(infra.database_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            return [row[0] for row in await connection.execute(text(statement), params)]
    finally:
        await engine.dispose()


async def chunk_ids(infra: Infrastructure, document_id: uuid.UUID) -> set[int]:
    return set(await first_column(infra, "SELECT id FROM kb_chunks WHERE document_id = :d", d=document_id))


async def test_qdrant_holds_the_vectors_the_dense_leg_searches(
    migrated: Infrastructure, services: RunningServices, own_nats: NATS
) -> None:
    org_id = await ensure_membership(
        migrated.database_url, f"qd-{uuid.uuid4().hex[:10]}", "alice", MemberRole.ADMIN, create=True
    )
    ids = {title: uuid.uuid4() for title in DOCUMENTS}
    async with qdrant_services(migrated, own_nats, services) as store:
        watcher = await IndexedWatcher().start(own_nats, org_id)
        for title, (doc_class, body) in DOCUMENTS.items():
            event = upsert_event(org_id, ids[title], title=title, body=body, version=1, docClass=doc_class)
            await publish_upsert(own_nats.jetstream(), event)
        for document_id in ids.values():
            await watcher.wait_for(document_id, 1)

        found = await search(own_nats, org_id, "how much does a seat cost per month")
        assert found[0] == ids["Pricing"]
        points = await store.search(org_id, [0.0] * 383 + [1.0], 50)  # every point of the org
        assert {hit.chunk_id for hit in points if hit.document_id == ids["Pricing"]} == await chunk_ids(
            migrated, ids["Pricing"]
        )
        # A facet filter is resolved in PostgreSQL and applied by Qdrant: a query near two documents of two
        # classes finds each only under its own class.
        near_both = "what does a seat cost and what do new engineers get"
        assert {ids["Pricing"], ids["Onboarding"]} <= set(await search(own_nats, org_id, near_both))
        assert await search(own_nats, org_id, near_both, type=["runbook"]) == [ids["Onboarding"]]
        decisions = await search(own_nats, org_id, near_both, type=["decision"])
        assert decisions[0] == ids["Pricing"]
        assert ids["Onboarding"] not in decisions

        await publish_delete(own_nats.jetstream(), delete_event(org_id, ids["Pricing"], version=2))
        await watcher.wait_for(ids["Pricing"], 2)
        remaining = await store.search(org_id, [0.0] * 383 + [1.0], 50)
        assert ids["Pricing"] not in {hit.document_id for hit in remaining}
        assert {hit.document_id for hit in remaining} == {ids["Onboarding"], ids["Incident review"]}
        assert ids["Pricing"] not in await search(own_nats, org_id, "how much does a seat cost per month")
        await watcher.stop()


async def test_with_the_qdrant_server_unreachable_search_answers_lexically(
    migrated: Infrastructure, services: RunningServices, nats_client: NATS, own_nats: NATS
) -> None:
    org_id = await ensure_membership(
        migrated.database_url, f"qd-{uuid.uuid4().hex[:10]}", "alice", MemberRole.ADMIN, create=True
    )
    pricing = uuid.uuid4()
    watcher = await IndexedWatcher().start(nats_client, org_id)  # indexed by the session's pipeline
    event = upsert_event(org_id, pricing, title="Pricing", body=DOCUMENTS["Pricing"][1], version=1)
    await publish_upsert(nats_client.jetstream(), event)
    await watcher.wait_for(pricing, 1)
    await watcher.stop()
    assert services.aggregator.embedder and own_nats.connected_url is not None
    nowhere = QdrantVectorStore(QdrantSettings(url=f"http://127.0.0.1:{free_port('127.0.0.1')}", timeout_seconds=1))
    aggregator = Aggregator(
        settings=AggregatorSettings(
            database_url=migrated.app_database_url, nats_url=own_nats.connected_url.geturl(), secret=SECRET
        ),
        embedder=BatchingEmbedder(services.aggregator.embedder.embedder),
        vectors=nowhere,
    )
    async with service_running(aggregator):
        async with asyncio.timeout(60):
            await aggregator.ready.wait()
        for mode in (RetrievalMode.HYBRID, RetrievalMode.SEMANTIC):
            request = FeedRequest(organization_id=org_id, q="enterprise plan seat", mode=mode)
            page = await ask_feed(own_nats, request)  # before: an error reply, the gateway's 502
            assert [item.id for item in page.items] == [pricing], mode


@contextlib.asynccontextmanager
async def indexer_with(
    infra: Infrastructure, nc: NATS, services: RunningServices, store: QdrantVectorStore | None
) -> AsyncIterator[Indexer]:
    """An indexer on `nc` mirroring to `store` (None: pgvector, the passages' own rows)."""
    assert nc.connected_url is not None and services.indexer.embedder
    settings = IndexerSettings(
        database_url=infra.app_database_url,
        nats_url=nc.connected_url.geturl(),
        concurrency=4,
        backfill_interval_seconds=0.2,
    )
    indexer = Indexer(settings=settings, embedder=BatchingEmbedder(services.indexer.embedder.embedder), vectors=store)
    async with service_running(indexer):
        yield indexer


async def mirror_pending(infra: Infrastructure, document_ids: list[uuid.UUID]) -> list[bool]:
    statement = "SELECT mirror_pending FROM kb_documents WHERE id = ANY(:ids) ORDER BY id"
    return await first_column(infra, statement, ids=document_ids)


async def test_with_the_qdrant_server_unreachable_changes_are_committed_and_mirrored_once_it_answers(
    migrated: Infrastructure, services: RunningServices, own_nats: NATS
) -> None:
    org_id = await ensure_membership(
        migrated.database_url, f"qd-{uuid.uuid4().hex[:10]}", "alice", MemberRole.ADMIN, create=True
    )
    ids = {title: uuid.uuid4() for title in DOCUMENTS}
    every_point = [0.0] * 383 + [1.0]
    watcher = await IndexedWatcher().start(own_nats, org_id)
    with tempfile.TemporaryDirectory(prefix="cx-qdrant-", dir="/tmp") as scratch:
        store = QdrantVectorStore(QdrantSettings(path=Path(scratch)))
        async with indexer_with(migrated, own_nats, services, store):
            for title in ("Pricing", "Onboarding"):
                await publish_upsert(
                    own_nats.jetstream(),
                    upsert_event(org_id, ids[title], title=title, body=DOCUMENTS[title][1], version=1),
                )
                await watcher.wait_for(ids[title], 1)

        nowhere = QdrantVectorStore(QdrantSettings(url=f"http://127.0.0.1:{free_port('127.0.0.1')}", timeout_seconds=1))
        async with indexer_with(migrated, own_nats, services, nowhere):
            await publish_delete(own_nats.jetstream(), delete_event(org_id, ids["Pricing"], version=2))
            body = DOCUMENTS["Incident review"][1]
            await publish_upsert(
                own_nats.jetstream(),
                upsert_event(org_id, ids["Incident review"], title="Incident review", body=body, version=1),
            )

            deleted = await watcher.wait_for(ids["Pricing"], 2)  # before: retried, then dead-lettered
            upserted = await watcher.wait_for(ids["Incident review"], 1)  # before: lexical-only, embedded again later

            assert deleted["deleted"] is True
            assert upserted["embedded"] is True
            changed = [ids["Pricing"], ids["Incident review"]]
            assert await mirror_pending(migrated, changed) == [True, True]
            await asyncio.sleep(1)  # several backfill passes: they wait for the store
            assert await mirror_pending(migrated, changed) == [True, True]
        await watcher.stop()

        answering = QdrantVectorStore(QdrantSettings(path=Path(scratch)))  # the same store, answering again
        async with indexer_with(migrated, own_nats, services, answering):
            async with asyncio.timeout(30):
                while await mirror_pending(migrated, changed) != [False, False]:
                    await asyncio.sleep(0.2)
            hits = await answering.search(org_id, every_point, 50)
        assert {hit.document_id for hit in hits} == {ids["Onboarding"], ids["Incident review"]}
        assert {hit.chunk_id for hit in hits if hit.document_id == ids["Incident review"]} == await chunk_ids(
            migrated, ids["Incident review"]
        )


async def documents_in(store: QdrantVectorStore, org_id: uuid.UUID) -> set[uuid.UUID]:
    return {hit.document_id for hit in await store.search(org_id, [0.0] * 383 + [1.0], 50)}


async def until_store_holds(store: QdrantVectorStore, org_id: uuid.UUID, expected: set[uuid.UUID]) -> None:
    async with asyncio.timeout(60):
        while await documents_in(store, org_id) != expected:
            await asyncio.sleep(0.2)


async def test_a_store_new_to_the_index_is_rebuilt_from_postgresql(
    migrated: Infrastructure, services: RunningServices, nats_client: NATS, own_nats: NATS
) -> None:
    """QA 40: switched to Qdrant, an index mirrored only what it indexed from then on: the documents already
    there, and those indexed during a spell back on pgvector, were never found by the dense leg."""
    org_id = await ensure_membership(
        migrated.database_url, f"qd-{uuid.uuid4().hex[:10]}", "alice", MemberRole.ADMIN, create=True
    )
    ids = {title: uuid.uuid4() for title in DOCUMENTS}
    watcher = await IndexedWatcher().start(nats_client, org_id)  # the session's pipeline: pgvector
    for title in ("Pricing", "Onboarding"):
        event = upsert_event(org_id, ids[title], title=title, body=DOCUMENTS[title][1], version=1)
        await publish_upsert(nats_client.jetstream(), event)
        await watcher.wait_for(ids[title], 1)

    with tempfile.TemporaryDirectory(prefix="cx-qdrant-", dir="/tmp") as scratch:
        store = QdrantVectorStore(QdrantSettings(path=Path(scratch)))
        async with indexer_with(migrated, own_nats, services, store):
            await until_store_holds(store, org_id, {ids["Pricing"], ids["Onboarding"]})

        async with indexer_with(migrated, own_nats, services, None):  # back on pgvector for a while
            async with asyncio.timeout(30):
                while await first_column(migrated, "SELECT target FROM vector_mirror") != ["pgvector"]:
                    await asyncio.sleep(0.2)
        body = DOCUMENTS["Incident review"][1]
        await publish_upsert(
            nats_client.jetstream(),
            upsert_event(org_id, ids["Incident review"], title="Incident review", body=body, version=1),
        )
        await publish_delete(nats_client.jetstream(), delete_event(org_id, ids["Pricing"], version=2))
        await watcher.wait_for(ids["Incident review"], 1)
        await watcher.wait_for(ids["Pricing"], 2)

        again = QdrantVectorStore(QdrantSettings(path=Path(scratch)))  # the same store, its points of before
        async with indexer_with(migrated, own_nats, services, again):
            await until_store_holds(again, org_id, {ids["Onboarding"], ids["Incident review"]})
    await watcher.stop()


async def test_a_rebuild_makes_the_collection_for_the_models_dimension() -> None:
    """QA 40: the collection kept CORTEX_QDRANT_DIMENSION (384) after a change to a 64-dimension model, and
    every mirror failed for good. The target recorded holds the dimension: a change rebuilds for it."""
    org_id, document_id = uuid.uuid4(), uuid.uuid4()
    with tempfile.TemporaryDirectory(prefix="cx-qdrant-", dir="/tmp") as scratch:
        store = QdrantVectorStore(QdrantSettings(path=Path(scratch)))
        try:
            await store.upsert(org_id, None, document_id, 1, [VectorChunk(1, 0, [1.0] * 384)])
            await store.rebuild(8)
            assert await store.search(org_id, [1.0] * 8, 5) == []  # emptied
            assert await store.upsert(org_id, None, document_id, 1, [VectorChunk(1, 0, [1.0] * 8)])
            assert [hit.document_id for hit in await store.search(org_id, [1.0] * 8, 5)] == [document_id]
        finally:
            await store.close()
