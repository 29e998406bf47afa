"""The indexer's reads and writes. Takes a session, never commits: the caller's transaction does."""

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, exists, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from cortex_contracts.uploads import UploadCreated
from cortex_store.models import KbChunk, KbCitation, KbDocument, KbUpload, Organization, ProcessedEvent


@dataclass(frozen=True)
class StoredVersion:
    organization_id: uuid.UUID
    version: int


async def claim_event(session: AsyncSession, consumer: str, event_id: str) -> bool:
    """Record the event as handled; False when it already was (a duplicate or a redelivery)."""
    claimed = await session.execute(
        insert(ProcessedEvent)
        .values(consumer=consumer, event_id=event_id)
        .on_conflict_do_nothing()
        .returning(ProcessedEvent.event_id)
    )
    return claimed.first() is not None


async def was_processed(session: AsyncSession, consumer: str, event_id: str) -> bool:
    query = select(exists().where(ProcessedEvent.consumer == consumer, ProcessedEvent.event_id == event_id))
    return bool(await session.scalar(query))


async def organization_exists(session: AsyncSession, organization_id: uuid.UUID) -> bool:
    return bool(await session.scalar(select(exists().where(Organization.id == organization_id))))


# A row lock cannot cover a document that has no row yet: two versions of a new document would both
# find none, and the later commit would overwrite the higher version (or fail a delete's tombstone).
# This lock, held until the transaction ends, serializes every writer of one document id.
LOCK_DOCUMENT_ID = text("SELECT pg_advisory_xact_lock(hashtextextended(CAST(:id AS text), 0))")


async def stored_version(session: AsyncSession, document_id: uuid.UUID, *, lock: bool = False) -> StoredVersion | None:
    """The stored version; with `lock`, no other transaction writes the document until this one ends."""
    if lock:
        await session.execute(LOCK_DOCUMENT_ID, {"id": str(document_id)})
    query = select(KbDocument.organization_id, KbDocument.version).where(KbDocument.id == document_id)
    row = (await session.execute(query.with_for_update() if lock else query)).first()
    return StoredVersion(row.organization_id, row.version) if row else None


async def embeddings_by_hash(session: AsyncSession, document_id: uuid.UUID) -> dict[str, list[float]]:
    """Embeddings of the document's current chunks, so unchanged passages are not embedded again."""
    rows = await session.execute(
        select(KbChunk.content_hash, KbChunk.embedding).where(
            KbChunk.document_id == document_id, KbChunk.embedding.is_not(None)
        )
    )
    return {row.content_hash: list(row.embedding) for row in rows}


async def upsert_document(session: AsyncSession, values: dict[str, Any]) -> None:
    statement = insert(KbDocument).values(**values)
    changed = {key: statement.excluded[key] for key in values if key not in ("id", "organization_id")}
    await session.execute(statement.on_conflict_do_update(index_elements=[KbDocument.id], set_=changed))


DELETE_TAGS = text("DELETE FROM kb_document_tags WHERE document_id = :document_id")
INSERT_TAGS = text("""
INSERT INTO kb_document_tags (organization_id, tag, document_id)
SELECT CAST(:organization_id AS uuid), tag, CAST(:document_id AS uuid) FROM unnest(CAST(:tags AS text[])) AS tag
GROUP BY tag
""")


async def replace_tags(
    session: AsyncSession, organization_id: uuid.UUID, document_id: uuid.UUID, tags: list[str], *, existing: bool
) -> None:
    """The document's tags as rows: the feed's tag filter reads these (an index row-level security allows).
    A document that was not `existing` has none to delete."""
    if existing:
        await session.execute(DELETE_TAGS, {"document_id": document_id})
    if tags:
        params = {"organization_id": organization_id, "document_id": document_id, "tags": tags}
        await session.execute(INSERT_TAGS, params)


# Token counts and postings come from PostgreSQL's own text analysis of the stored chunks, so the
# lexical leg's BM25 sees exactly the lexemes its queries are analysed into. Every passage carries its
# heading path (weight A in `tsv`); in BM25 a heading counts once, in the first passage under it, as it
# appears once in the document — otherwise a long document's title words would count once per passage.
HEADING_COUNTS = """(c.ordinal = 0 OR c.heading IS DISTINCT FROM (
    SELECT prev.heading FROM kb_chunks prev WHERE prev.document_id = c.document_id AND prev.ordinal = c.ordinal - 1))"""
# A passage's token count is computed as it is inserted, from the very expression of its generated `tsv`
# column (migration 0001), so the row is written once. Counted by a later UPDATE, the new row version
# rarely fit its page: every index took a second entry, the HNSW graph a second insertion.
CHUNK_TSV = (
    "setweight(to_tsvector('english', CAST(:heading AS text)), 'A') || to_tsvector('english', CAST(:text AS text))"
)
INSERT_CHUNK = text(f"""
INSERT INTO kb_chunks (document_id, organization_id, ordinal, heading, text, content_hash, embedding, token_count)
VALUES (:document_id, :organization_id, :ordinal, :heading, :text, :content_hash, CAST(:embedding AS vector), (
    SELECT count(*) FROM unnest({CHUNK_TSV}) u, unnest(u.weights) w WHERE w <> 'A' OR CAST(:heading_counts AS boolean)))
""")
# The document's token count (the sum of its passages') and its postings, in one statement.
COUNT_TOKENS_AND_POST = text(f"""
WITH d AS (
    UPDATE kb_documents d
    SET token_count = coalesce((SELECT sum(c.token_count) FROM kb_chunks c WHERE c.document_id = d.id), 0)
    WHERE d.id = :document_id
    RETURNING d.id, d.token_count
)
INSERT INTO kb_postings (organization_id, lexeme, chunk_id, document_id, tf, document_tokens)
SELECT c.organization_id, u.lexeme, c.id, c.document_id, t.tf, d.token_count
FROM kb_chunks c JOIN d ON d.id = c.document_id, unnest(c.tsv) u,
     LATERAL (SELECT count(*)::int AS tf FROM unnest(u.weights) w WHERE w <> 'A' OR {HEADING_COUNTS}) t
WHERE c.document_id = :document_id AND t.tf > 0
""")


def _vector_literal(vector: list[float] | None) -> str | None:
    return None if vector is None else "[" + ",".join(str(float(x)) for x in vector) + "]"


def _chunk_parameters(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in ordinal order; in BM25 a heading counts in the first passage under it only."""
    return [
        row
        | {
            "embedding": _vector_literal(row["embedding"]),
            "heading_counts": index == 0 or row["heading"] != rows[index - 1]["heading"],
        }
        for index, row in enumerate(rows)
    ]


async def replace_chunks(
    session: AsyncSession, document_id: uuid.UUID, rows: list[dict[str, Any]], *, existing: bool
) -> None:
    """Replace the document's chunks (their postings go with them, by cascade) and post the new ones.
    `rows` are in ordinal order. A document that was not `existing` has none to delete."""
    if existing:
        await session.execute(delete(KbChunk).where(KbChunk.document_id == document_id))
    if rows:
        await session.execute(INSERT_CHUNK, _chunk_parameters(rows))
        await session.execute(COUNT_TOKENS_AND_POST, {"document_id": document_id})


async def tombstone_document(
    session: AsyncSession,
    document_id: uuid.UUID,
    organization_id: uuid.UUID,
    version: int,
    at: datetime,
    *,
    exists_already: bool,
) -> bool:
    """Mark deleted but keep the row and its version, so a late older upsert cannot bring it back.

    False when the id is taken by a row this organization cannot see (another organization's document).
    """
    await session.execute(delete(KbChunk).where(KbChunk.document_id == document_id))
    if exists_already:
        await session.execute(
            update(KbDocument)
            .where(KbDocument.id == document_id)
            .values(version=version, deleted_at=at, updated_at=at, body="", content_hash="", embedded=False)
        )
        return True
    inserted = await session.execute(
        insert(KbDocument)
        .values(
            id=document_id,
            organization_id=organization_id,
            scope="org",
            title="",
            status="archived",
            source="kb",
            tags=[],
            body="",
            content_hash="",
            version=version,
            updated_at=at,
            deleted_at=at,
        )
        .on_conflict_do_nothing(index_elements=[KbDocument.id])
        .returning(KbDocument.id)
    )
    return inserted.first() is not None


async def replace_citations(
    session: AsyncSession,
    organization_id: uuid.UUID,
    document_id: uuid.UUID,
    cited: list[uuid.UUID],
    *,
    existing: bool,
) -> None:
    if existing:  # (a new document cites nothing yet)
        await session.execute(delete(KbCitation).where(KbCitation.citing_id == document_id))
    rows = [
        {"organization_id": organization_id, "citing_id": document_id, "cited_id": target}
        for target in dict.fromkeys(cited)
        if target != document_id
    ]
    if rows:
        await session.execute(insert(KbCitation), rows)


async def upsert_upload(session: AsyncSession, upload: UploadCreated) -> None:
    """Record the upload, or a newer file uploaded under the same id (the caller checked the version)."""
    values = {
        "id": upload.upload_id,
        "organization_id": upload.organization_id,
        "work_id": upload.work_id,
        "filename": upload.filename,
        "media_type": upload.media_type,
        "size_bytes": upload.size_bytes,
        "object_bucket": upload.object.bucket if upload.object else None,
        "object_name": upload.object.name if upload.object else None,
    }
    statement = insert(KbUpload).values(**values)
    changed = {key: statement.excluded[key] for key in values if key not in ("id", "organization_id")}
    await session.execute(statement.on_conflict_do_update(index_elements=[KbUpload.id], set_=changed))
