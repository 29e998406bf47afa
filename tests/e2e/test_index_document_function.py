"""What `cortex_index_document` (migration 0013) writes for one document, called as the indexer calls it.

Passages, BM25 lengths and postings, tags and citations, on a first write and on an edit; a write that
finds the index moved to another embedding space is stored lexical-only.
"""

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.documents import DocumentDeleted, DocumentUpserted
from cortex_embedding.errors import EmbeddingError
from cortex_indexer.embedding_space import EmbeddingSpace
from cortex_indexer.indexing import EventMeta, IndexingContext, delete_document, index_document
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import org_transaction
from tests.conftest import Org
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e

# Over 160 words under one heading: two passages share the heading path (Handbook, Pricing). The word
# "pricing" appears in the heading only, so in BM25 it counts once, in the first of the two.
LONG_SECTION = "# Pricing\n\n" + " ".join(f"Enterprise seats are negotiated yearly, clause {n}." for n in range(40))
BODY = LONG_SECTION + "\n\n# Onboarding\n\nNew engineers get a laptop and a buddy on day one."


async def fake_embed(texts: list[str]) -> list[list[float]]:
    return [[1.0] + [0.0] * 383 for _ in texts]


@pytest.fixture
async def sessions(migrated: Infrastructure) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = make_engine(migrated.app_database_url)
    yield make_sessionmaker(engine)
    await engine.dispose()


async def _index(ctx: IndexingContext, org: Org, document_id: uuid.UUID, version: int, **fields: Any) -> Any:
    meta = EventMeta(str(uuid.uuid4()), org.id, None, datetime.now(UTC))
    doc = DocumentUpserted(document_id=document_id, organization_id=org.id, version=version, **fields)
    return await index_document(ctx, meta, doc, doc.body or "")


async def _delete(ctx: IndexingContext, org: Org, document_id: uuid.UUID, version: int) -> Any:
    meta = EventMeta(str(uuid.uuid4()), org.id, None, datetime.now(UTC))
    return await delete_document(
        ctx, meta, DocumentDeleted(document_id=document_id, organization_id=org.id, version=version)
    )


async def _rows(sessions: async_sessionmaker[AsyncSession], org: Org, sql: str, **params: Any) -> list[Any]:
    async with org_transaction(sessions, org.id) as session:
        return list(await session.execute(text(sql), params))


async def test_passages_lengths_and_postings(org: Org, sessions: async_sessionmaker[AsyncSession]) -> None:
    ctx = IndexingContext(sessions=sessions, embed=fake_embed, consumer=f"test-{uuid.uuid4()}")
    document_id = uuid.uuid4()
    report = await _index(ctx, org, document_id, 1, title="Handbook", body=BODY, tags=["hr", "hr", "ops"])
    assert report is not None and report.chunks == 3 and report.embedded

    chunks = await _rows(
        sessions,
        org,
        "SELECT c.id, c.ordinal, c.heading, c.token_count, c.embedding IS NOT NULL AS embedded, "
        "(SELECT coalesce(sum(p.tf), 0) FROM kb_postings p WHERE p.chunk_id = c.id) AS posted, "
        "(SELECT tf FROM kb_postings p WHERE p.chunk_id = c.id AND p.lexeme = 'price') AS price "
        "FROM kb_chunks c WHERE c.document_id = :d ORDER BY c.ordinal",
        d=document_id,
    )
    assert [c.heading for c in chunks] == ["Handbook › Pricing", "Handbook › Pricing", "Handbook › Onboarding"]
    assert all(c.embedded for c in chunks)
    # A passage's length is what its postings add up to; the heading counts in the first passage under it.
    assert [c.posted for c in chunks] == [c.token_count for c in chunks]
    assert [c.price for c in chunks] == [1, None, None]
    assert chunks[1].token_count < chunks[0].token_count

    (document,) = await _rows(sessions, org, "SELECT token_count FROM kb_documents WHERE id = :d", d=document_id)
    assert document.token_count == sum(c.token_count for c in chunks)
    lengths = await _rows(
        sessions, org, "SELECT DISTINCT document_tokens FROM kb_postings WHERE document_id = :d", d=document_id
    )
    assert [row.document_tokens for row in lengths] == [document.token_count]
    tags = await _rows(
        sessions, org, "SELECT tag FROM kb_document_tags WHERE document_id = :d ORDER BY tag", d=document_id
    )
    assert [row.tag for row in tags] == ["hr", "ops"]


async def test_an_edit_replaces_passages_postings_tags_and_citations(
    org: Org, sessions: async_sessionmaker[AsyncSession]
) -> None:
    ctx = IndexingContext(sessions=sessions, embed=fake_embed, consumer=f"test-{uuid.uuid4()}")
    document_id, cited, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    first = await _index(ctx, org, document_id, 1, title="Handbook", body=BODY, tags=["hr"], cites=[cited])
    assert first is not None
    edited = await _index(
        ctx, org, document_id, 2, title="Runbook", body="Restart the ingest workers.", tags=["ops"], cites=[other]
    )
    assert edited is not None and edited.chunks == 1
    assert await _index(ctx, org, document_id, 2, title="Same version again", body="Ignored.") is None

    lexemes = await _rows(
        sessions, org, "SELECT DISTINCT lexeme FROM kb_postings WHERE document_id = :d ORDER BY 1", d=document_id
    )
    assert [row.lexeme for row in lexemes] == ["ingest", "restart", "runbook", "worker"]
    (document,) = await _rows(
        sessions, org, "SELECT title, version, tags, token_count FROM kb_documents WHERE id = :d", d=document_id
    )
    assert (document.title, document.version, document.tags, document.token_count) == ("Runbook", 2, ["ops"], 4)
    tags = await _rows(sessions, org, "SELECT tag FROM kb_document_tags WHERE document_id = :d", d=document_id)
    assert [row.tag for row in tags] == ["ops"]
    citations = await _rows(sessions, org, "SELECT cited_id FROM kb_citations WHERE citing_id = :d", d=document_id)
    assert [row.cited_id for row in citations] == [other]


async def test_a_write_after_the_index_moved_to_another_model_is_lexical_only(
    org: Org, sessions: async_sessionmaker[AsyncSession]
) -> None:
    # This copy believes its model is the index's; the index records another one (the session's model).
    space = EmbeddingSpace(model="another-model", dimension=384, adopted=True)
    ctx = IndexingContext(sessions=sessions, embed=fake_embed, consumer=f"test-{uuid.uuid4()}", space=space)
    document_id = uuid.uuid4()

    report = await _index(ctx, org, document_id, 1, title="Handbook", body=BODY)

    assert report is not None and report.chunks == 3 and not report.embedded
    assert space.superseded and not space.writable
    embedded = await _rows(
        sessions,
        org,
        "SELECT count(*) AS n FROM kb_chunks WHERE document_id = :d AND embedding IS NOT NULL",
        d=document_id,
    )
    assert embedded[0].n == 0


async def test_a_write_whose_embedder_failed_is_lexical_only_and_keeps_the_space(
    org: Org, sessions: async_sessionmaker[AsyncSession]
) -> None:
    (active,) = await _rows(sessions, org, "SELECT model, dimension FROM embedding_space WHERE active")
    space = EmbeddingSpace(model=active.model, dimension=active.dimension, adopted=True)

    async def failing_embed(texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("the embedder is down")

    ctx = IndexingContext(sessions=sessions, embed=failing_embed, consumer=f"test-{uuid.uuid4()}", space=space)
    report = await _index(ctx, org, uuid.uuid4(), 1, title="Handbook", body=BODY)

    assert report is not None and report.chunks == 3 and not report.embedded
    assert space.writable  # a failed embedder says nothing about the index's space


async def test_a_deletion_wins_a_tie_of_versions_whatever_came_first(
    org: Org, sessions: async_sessionmaker[AsyncSession]
) -> None:
    """Upstream deletes a document at the version it has: that removes it, also at the highest version."""
    ctx = IndexingContext(sessions=sessions, embed=fake_embed, consumer=f"test-{uuid.uuid4()}")
    highest = 2**63 - 1
    stored, deleted_first = uuid.uuid4(), uuid.uuid4()
    assert await _index(ctx, org, stored, highest, title="Handbook", body=BODY) is not None

    deletion = await _delete(ctx, org, stored, highest)
    assert deletion is not None and deletion.deleted
    assert await _delete(ctx, org, stored, highest) is None  # already deleted: nothing to report again
    assert await _index(ctx, org, stored, highest, title="Handbook again", body=BODY) is None

    assert await _delete(ctx, org, deleted_first, 7) is not None
    assert await _index(ctx, org, deleted_first, 7, title="Arrives late", body=BODY) is None

    rows = await _rows(
        sessions,
        org,
        "SELECT d.id, d.version, d.deleted_at IS NOT NULL AS deleted, d.body, "
        "(SELECT count(*) FROM kb_chunks c WHERE c.document_id = d.id) AS chunks "
        "FROM kb_documents d WHERE d.id = ANY(:ids) ORDER BY d.version",
        ids=[stored, deleted_first],
    )
    assert [(r.id, r.version, r.deleted, r.body, r.chunks) for r in rows] == [
        (deleted_first, 7, True, "", 0),
        (stored, highest, True, "", 0),
    ]


async def test_a_failed_document_deleted_is_not_brought_back_at_the_deletions_version(
    org: Org, sessions: async_sessionmaker[AsyncSession]
) -> None:
    """A failed document keeps its status when deleted; the deletion's version is still not writable."""
    ctx = IndexingContext(sessions=sessions, embed=fake_embed, consumer=f"test-{uuid.uuid4()}")
    document_id = uuid.uuid4()
    meta = EventMeta(str(uuid.uuid4()), org.id, None, datetime.now(UTC))
    failed = DocumentUpserted(document_id=document_id, organization_id=org.id, version=1, title="scan.pdf")
    assert await index_document(ctx, meta, failed, "", failure_reason="the file is encrypted") is not None
    assert await _delete(ctx, org, document_id, 2) is not None

    assert await _index(ctx, org, document_id, 2, title="Replayed", body=BODY) is None
    (row,) = await _rows(
        sessions,
        org,
        "SELECT version, status, deleted_at IS NOT NULL AS deleted FROM kb_documents WHERE id = :d",
        d=document_id,
    )
    assert (row.version, row.status, row.deleted) == (2, "failed", True)
