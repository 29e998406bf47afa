"""An OpenAI-compatible embedder that is down, then back; and a change of embedding model.

These run their own indexer and aggregator (on a database and NATS server of their own): the embedding
space is one per database, and the session's services embed with the local model.
"""

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from sqlalchemy import text

from cortex_aggregator.bootstrap import Aggregator
from cortex_aggregator.settings import AggregatorSettings
from cortex_cli.organizations import ensure_membership
from cortex_contracts.rpc import FeedRequest, ItemReply, ItemRequest, RetrievalMode, StatsReply, StatsRequest
from cortex_contracts.subjects import RPC_AGGREGATOR_ITEM, RPC_AGGREGATOR_STATS
from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.openai_compatible import OpenAICompatibleEmbedder, OpenAIEmbedderSettings
from cortex_indexer.bootstrap import Indexer
from cortex_indexer.settings import IndexerSettings
from cortex_store.database import make_engine
from cortex_store.models import MemberRole
from tests.embedding_server import Answer, FakeEmbeddingServer
from tests.events import IndexedWatcher, publish_remembered, publish_upsert, remembered_event, upsert_event
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database
from tests.own_nats import ask, ask_feed, own_nats_client
from tests.services import service_running

pytestmark = pytest.mark.e2e

SECRET = "outage-secret-" + "x" * 32
BODY = (
    "# Pricing\n\nOur pricing has three tiers, and the enterprise tier is negotiated with each customer "
    "for the number of seats it needs."
)
# Only English stop words: the lexical leg finds nothing for it, the bag-of-words embedding does.
STOP_WORDS_QUERY = "and the for with"


@dataclass(frozen=True)
class Databases:
    owner_url: str
    app_url: str


@pytest.fixture
async def database(migrated: Infrastructure) -> AsyncIterator[Databases]:
    """A database of this test's own (same server), migrated: its embedding space is this test's alone."""
    async with own_database(migrated.database_url, "cx_space") as name:
        yield Databases(on_database(migrated.database_url, name), on_database(migrated.app_database_url, name))


@pytest.fixture
async def own_nats() -> AsyncIterator[NATS]:
    async with own_nats_client("tests-embedder-outage") as nc:
        yield nc


def endpoint(server: FakeEmbeddingServer, model: str, **overrides: Any) -> BatchingEmbedder:
    settings = OpenAIEmbedderSettings.model_validate(
        {
            "base_url": server.base_url,
            "model": model,
            "dimension": server.dimension,
            "timeout_seconds": 1.0,
            "max_retries": 1,
            "backoff_initial_seconds": 0.05,
            **overrides,
        }
    )
    return BatchingEmbedder(OpenAICompatibleEmbedder(settings))


@contextlib.asynccontextmanager
async def indexer(db: Databases, nc: NATS, embedder: BatchingEmbedder, **overrides: Any) -> AsyncIterator[Indexer]:
    url = nc.connected_url
    assert url is not None
    settings = IndexerSettings(
        database_url=db.app_url,
        nats_url=url.geturl(),
        max_deliver=3,
        concurrency=2,
        backfill_interval_seconds=0.3,
        **overrides,
    )
    running = Indexer(settings=settings, embedder=embedder)
    async with service_running(running):
        yield running


@contextlib.asynccontextmanager
async def aggregator(db: Databases, nc: NATS, embedder: BatchingEmbedder) -> AsyncIterator[Aggregator]:
    url = nc.connected_url
    assert url is not None
    settings = AggregatorSettings(
        database_url=db.app_url, nats_url=url.geturl(), secret=SECRET, embedding_space_refresh_seconds=0.3
    )
    running = Aggregator(settings=settings, embedder=embedder)
    async with service_running(running):
        async with asyncio.timeout(30):
            await running.ready.wait()
        yield running


async def search(nc: NATS, org_id: uuid.UUID, q: str, mode: RetrievalMode) -> list[uuid.UUID]:
    page = await ask_feed(nc, FeedRequest(organization_id=org_id, q=q, mode=mode))
    return [item.id for item in page.items]


async def scalar(db: Databases, sql: str, **params: object) -> Any:
    engine = make_engine(db.owner_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            return (await connection.execute(text(sql), params)).scalar()
    finally:
        await engine.dispose()


async def eventually(check: Callable[[], Any], timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.2)


async def new_org(db: Databases) -> uuid.UUID:
    return await ensure_membership(db.owner_url, f"org-{uuid.uuid4().hex[:10]}", "alice", MemberRole.ADMIN, create=True)


async def publish_pricing(nc: NATS, org_id: uuid.UUID) -> uuid.UUID:
    document_id = uuid.uuid4()
    watcher = await IndexedWatcher().start(nc, org_id)
    await publish_upsert(nc.jetstream(), upsert_event(org_id, document_id, title="Pricing", body=BODY, version=1))
    indexed = await watcher.wait_for(document_id, 1)
    await watcher.stop()
    assert indexed["chunks"] >= 1
    return document_id


def embedded_texts(server: FakeEmbeddingServer, word: str) -> list[str]:
    return [item for request in list(server.requests) for item in request["input"] if word in item]


async def remember(nc: NATS, org_id: uuid.UUID, content: str) -> uuid.UUID:
    event = remembered_event(org_id, content)
    await publish_remembered(nc.jetstream(), event)
    return uuid.UUID(str(event.subject))


@pytest.mark.parametrize("dimension", [32, None], ids=["dimension configured", "dimension discovered"])
async def test_documents_are_indexed_lexical_only_while_the_embedder_is_down_then_backfilled(
    database: Databases, own_nats: NATS, dimension: int | None
) -> None:
    # Configured: the indexer switches to its space at once and its embedding calls fail (after retries).
    # Discovered: the space is only known once the endpoint answers, so the backfill switches to it later.
    fake = FakeEmbeddingServer(dimension=32)  # not started: nothing listens on its port yet
    org_id = await new_org(database)
    async with (
        indexer(database, own_nats, endpoint(fake, "fake-a", dimension=dimension)),
        aggregator(database, own_nats, endpoint(fake, "fake-a", dimension=dimension, max_retries=0)),
    ):
        document_id = await publish_pricing(own_nats, org_id)
        embedded = "SELECT embedded FROM kb_documents WHERE id = :id"
        assert await scalar(database, embedded, id=document_id) is False
        entry_id = await remember(own_nats, org_id, "The customer asked for annual invoices.")
        entry_stored = "SELECT count(*) FROM memory_entry WHERE id = :id"
        entry_embedded = "SELECT count(*) FROM memory_entry WHERE id = :id AND embedding IS NOT NULL"
        await eventually(lambda: scalar(database, entry_stored, id=entry_id))
        assert await scalar(database, entry_embedded, id=entry_id) == 0
        assert await scalar(database, "SELECT count(*) FROM kb_chunks WHERE embedding IS NOT NULL") == 0

        assert await search(own_nats, org_id, "enterprise pricing", RetrievalMode.HYBRID) == [document_id]
        assert await search(own_nats, org_id, STOP_WORDS_QUERY, RetrievalMode.SEMANTIC) == []  # no dense leg

        fake.start()
        try:
            await eventually(lambda: scalar(database, embedded, id=document_id))
            await eventually(lambda: scalar(database, entry_embedded, id=entry_id))
            assert embedded_texts(fake, "enterprise")  # the backfill's request (not a health probe)
            assert await scalar(database, "SELECT count(*) FROM kb_chunks WHERE embedding IS NULL") == 0

            async def found_semantically() -> bool:
                return await search(own_nats, org_id, STOP_WORDS_QUERY, RetrievalMode.SEMANTIC) == [document_id]

            await eventually(found_semantically)
        finally:
            fake.stop()


async def test_answers_of_another_dimension_at_start_neither_switch_the_index_nor_stick(
    database: Databases, own_nats: NATS
) -> None:
    """No dimension configured (the default). Before (QA 29): a restarted indexer whose first answer had another
    length switched the index to it, clearing every stored embedding, then refused every right answer; an
    aggregator whose first query vector had another length answered lexical-only until restarted."""
    fake = FakeEmbeddingServer(dimension=32).start()
    org_id = await new_org(database)
    space = "SELECT model || '/' || dimension FROM embedding_space WHERE active"
    vectors = "SELECT count(*) FROM kb_chunks WHERE embedding IS NOT NULL"
    wrong = Answer([1.0] * 8)
    try:
        async with indexer(database, own_nats, endpoint(fake, "fake-a", dimension=None)):
            first = await publish_pricing(own_nats, org_id)
        embedded_before = await scalar(database, vectors)
        assert (await scalar(database, space), embedded_before > 0) == ("fake-a/32", True)

        fake.script.extend([wrong] * 3)
        async with (
            indexer(database, own_nats, endpoint(fake, "fake-a", dimension=None)),
            aggregator(database, own_nats, endpoint(fake, "fake-a", dimension=None, max_retries=0)),
        ):
            assert await scalar(database, space) == "fake-a/32"
            assert await scalar(database, vectors) >= embedded_before  # nothing cleared
            second = await publish_pricing(own_nats, org_id)
            await eventually(lambda: scalar(database, "SELECT embedded FROM kb_documents WHERE id = :id", id=second))
            fake.script.append(wrong)  # the next query vector: lexical-only for it, not for good

            async def found_semantically() -> bool:
                found = await search(own_nats, org_id, STOP_WORDS_QUERY, RetrievalMode.SEMANTIC)
                return set(found) == {first, second}

            await eventually(found_semantically)
            assert await scalar(database, space) == "fake-a/32"
    finally:
        fake.stop()


async def test_a_mistyped_dimension_does_not_switch_the_index(
    database: Databases, own_nats: NATS, caplog: pytest.LogCaptureFixture
) -> None:
    """Before (QA 47): a configured dimension the endpoint does not answer with switched the index at start,
    clearing every stored embedding; every answer was refused after, and unsetting the dimension did not help."""
    fake = FakeEmbeddingServer(dimension=32).start()
    org_id = await new_org(database)
    space = "SELECT model || '/' || dimension FROM embedding_space WHERE active"
    vectors = "SELECT count(*) FROM kb_chunks WHERE embedding IS NOT NULL"
    try:
        async with indexer(database, own_nats, endpoint(fake, "fake-a")):
            await publish_pricing(own_nats, org_id)
        embedded_before = await scalar(database, vectors)
        assert (await scalar(database, space), embedded_before > 0) == ("fake-a/32", True)

        async with indexer(database, own_nats, endpoint(fake, "fake-a", dimension=48)):
            await publish_pricing(own_nats, org_id)  # indexed lexical-only meanwhile
            assert await scalar(database, space) == "fake-a/32"
            assert await scalar(database, vectors) == embedded_before
        assert (
            "the index stays in fake-a (dimension 32), not fake-a (dimension 48), until the embedder answers vectors "
            "of that length: a vector of length 32, expected 48"
        ) in caplog.text

        async with indexer(database, own_nats, endpoint(fake, "fake-a", dimension=None)):  # corrected
            await eventually(lambda: scalar(database, "SELECT bool_and(embedded) FROM kb_documents"))
    finally:
        fake.stop()


async def test_a_new_embedding_model_re_embeds_the_index_and_search_never_mixes_models(
    database: Databases, own_nats: NATS
) -> None:
    first = FakeEmbeddingServer(dimension=32).start()
    second = FakeEmbeddingServer(dimension=48).start()
    org_id = await new_org(database)
    space = "SELECT model || '/' || dimension FROM embedding_space WHERE active"
    column_type = (
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = CAST(:t AS regclass) AND attname = 'embedding'"
    )
    try:
        async with indexer(database, own_nats, endpoint(first, "fake-a")):
            document_id = await publish_pricing(own_nats, org_id)
            assert await scalar(database, space) == "fake-a/32"
            assert await scalar(database, "SELECT embedded FROM kb_documents WHERE id = :id", id=document_id)

        async with (
            indexer(database, own_nats, endpoint(second, "fake-b")),
            aggregator(database, own_nats, endpoint(first, "fake-a", max_retries=0)),
        ):
            # Start-up switches the space: the columns take the new dimension, the backfill re-embeds.
            async def switched() -> bool:
                return bool(await scalar(database, space) == "fake-b/48")

            await eventually(switched)
            assert await scalar(database, column_type, t="kb_chunks") == "vector(48)"
            assert await scalar(database, column_type, t="memory_entry") == "vector(48)"
            graphs = "SELECT string_agg(indexname, ',') FROM pg_indexes WHERE indexname LIKE '%embedding_hnsw'"
            assert await scalar(database, graphs) == "kb_chunks_embedding_hnsw"  # recall scans memory exactly
            rebuilt = "SELECT indexdef FROM pg_indexes WHERE indexname = 'kb_chunks_embedding_hnsw'"
            assert str(await scalar(database, rebuilt)).endswith("WHERE in_ann")  # only admitted organizations
            await eventually(
                lambda: scalar(database, "SELECT embedded FROM kb_documents WHERE id = :id", id=document_id)
            )
            assert any(r["model"] == "fake-b" for r in second.requests)
            # The query model is still the old one: dense search is skipped, lexical still answers.
            assert await search(own_nats, org_id, STOP_WORDS_QUERY, RetrievalMode.SEMANTIC) == []
            assert await search(own_nats, org_id, "enterprise pricing", RetrievalMode.HYBRID) == [document_id]

        async with aggregator(database, own_nats, endpoint(second, "fake-b", max_retries=0)):
            assert await search(own_nats, org_id, STOP_WORDS_QUERY, RetrievalMode.SEMANTIC) == [document_id]

        # The same dimension, another model: as the services' role (row-level security), the switch
        # clears every organization's embeddings and leaves the column as it is.
        engine = make_engine(database.app_url, pool_size=1)
        try:
            async with engine.begin() as connection:
                switch = text("SELECT cortex_switch_embedding_space(:m, 48)")
                assert (await connection.execute(switch, {"m": "fake-c"})).scalar() is True
                assert (await connection.execute(switch, {"m": "fake-c"})).scalar() is False
        finally:
            await engine.dispose()
        assert await scalar(database, "SELECT count(*) FROM kb_chunks WHERE embedding IS NOT NULL") == 0
        assert await scalar(database, "SELECT embedded FROM kb_documents WHERE id = :id", id=document_id) is False
        assert await scalar(database, column_type, t="kb_chunks") == "vector(48)"
    finally:
        first.stop()
        second.stop()


async def test_a_copy_left_on_the_old_model_writes_no_vectors_of_it(database: Databases, own_nats: NATS) -> None:
    fake = FakeEmbeddingServer(dimension=32).start()
    org_id = await new_org(database)
    vectors = "SELECT count(*) FROM kb_chunks WHERE embedding IS NOT NULL"
    try:
        async with indexer(database, own_nats, endpoint(fake, "fake-a")):

            async def adopted() -> bool:
                return bool(await scalar(database, "SELECT model FROM embedding_space WHERE active") == "fake-a")

            await eventually(adopted)
            # A newer copy switches the index to another model; this one has not been restarted.
            engine = make_engine(database.app_url, pool_size=1)
            try:
                async with engine.begin() as connection:
                    await connection.execute(text("SELECT cortex_switch_embedding_space('fake-b', 32)"))
            finally:
                await engine.dispose()
            document_id = await publish_pricing(own_nats, org_id)
            assert embedded_texts(fake, "enterprise")  # it did embed, with the old model ...
            assert await scalar(database, "SELECT embedded FROM kb_documents WHERE id = :id", id=document_id) is False
            await asyncio.sleep(1.5)  # ... and several backfill passes later has still stored none of it
            assert await scalar(database, vectors) == 0
    finally:
        fake.stop()


async def test_a_text_the_embedder_refuses_holds_back_no_other_backfill_and_is_tried_again(
    database: Databases, own_nats: NATS
) -> None:
    fake = FakeEmbeddingServer(dimension=32)  # not started: everything below is indexed lexical-only
    fake.refuse_word = "overlong"  # as an endpoint refuses a text too long for its context (HTTP 400)
    org_id = await new_org(database)
    embedder = endpoint(fake, "fake-a", dimension=32)
    async with indexer(database, own_nats, embedder, backfill_refused_retry_seconds=1.0):
        refused_document = uuid.uuid4()
        watcher = await IndexedWatcher().start(own_nats, org_id)
        event = upsert_event(org_id, refused_document, title="Log", body="An overlong stack trace.", version=1)
        await publish_upsert(own_nats.jetstream(), event)
        await watcher.wait_for(refused_document, 1)
        await watcher.stop()
        document_id = await publish_pricing(own_nats, org_id)  # after it: a later passage id
        refused_entry = await remember(own_nats, org_id, "An overlong transcript.")
        entry_id = await remember(own_nats, org_id, "The customer asked for annual invoices.")
        stored = "SELECT count(*) FROM memory_entry WHERE id IN (:a, :b)"
        await eventually(lambda: scalar(database, stored, a=refused_entry, b=entry_id))

        fake.start()
        try:
            # Before: the backfill's batch held the refused text, every pass, so nothing was ever backfilled.
            await eventually(
                lambda: scalar(database, "SELECT embedded FROM kb_documents WHERE id = :id", id=document_id)
            )
            entry_embedded = "SELECT embedding IS NOT NULL FROM memory_entry WHERE id = :id"
            await eventually(lambda: scalar(database, entry_embedded, id=entry_id))
            assert await scalar(database, entry_embedded, id=refused_entry) is False
            chunk_embedded = "SELECT bool_or(embedding IS NOT NULL) FROM kb_chunks WHERE document_id = :id"
            assert await scalar(database, chunk_embedded, id=refused_document) is False

            async with aggregator(database, own_nats, embedder):
                # The API says what is found by its words only, and which document.
                stats = await ask(own_nats, RPC_AGGREGATOR_STATS, StatsRequest(organization_id=org_id), StatsReply)
                assert (stats.documents_lexical_only, stats.memory_entries_lexical_only) == (1, 1)
                assert await embedded_in_detail(own_nats, org_id, refused_document) is False
                assert await embedded_in_detail(own_nats, org_id, document_id) is True
                tries = len(embedded_texts(fake, "overlong transcript"))

                async def tried_again() -> bool:
                    return len(embedded_texts(fake, "overlong transcript")) > tries

                await eventually(tried_again)  # after the delay, and refused again: set aside twice as long
                assert await scalar(database, entry_embedded, id=refused_entry) is False

                # The refusal was a passing fault (a proxy that cut answers short, say): the texts are tried
                # again and embedded, with no restart. Before, they stayed lexical-only until one.
                fake.refuse_word = None
                await eventually(lambda: scalar(database, entry_embedded, id=refused_entry))
                await eventually(lambda: scalar(database, chunk_embedded, id=refused_document))
                stats = await ask(own_nats, RPC_AGGREGATOR_STATS, StatsRequest(organization_id=org_id), StatsReply)
                assert (stats.documents_lexical_only, stats.memory_entries_lexical_only) == (0, 0)
                assert await embedded_in_detail(own_nats, org_id, refused_document) is True
        finally:
            fake.stop()


async def embedded_in_detail(nc: NATS, org_id: uuid.UUID, document_id: uuid.UUID) -> bool:
    request = ItemRequest(organization_id=org_id, document_id=document_id)
    return (await ask(nc, RPC_AGGREGATOR_ITEM, request, ItemReply)).embedded
