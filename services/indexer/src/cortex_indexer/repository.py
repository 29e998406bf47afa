"""The indexer's reads and writes: statements in the caller's session (which commits, never these), and
the calls of the indexing functions (migration 0013) on an asyncpg connection, each a whole transaction
when that connection is in autocommit."""

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import delete, exists, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from cortex_indexer.outbox import OutboxMessage
from cortex_store.models import KbChunk, KbDocument, Organization, ProcessedEvent


@dataclass(frozen=True)
class StoredVersion:
    organization_id: uuid.UUID
    version: int
    deleted: bool


def inbox_key(organization_id: uuid.UUID, event_id: str) -> str:
    """How the inbox records an event: an event id is its publisher's choice, unique at best among the events
    of the organization it writes for, so it is recorded under that organization. One organization's
    publisher cannot claim (and so silence) an id another organization's events will carry."""
    return f"{organization_id}/{event_id}"


async def claim_event(session: AsyncSession, consumer: str, event_id: str) -> bool:
    """Record the event as handled; False when it already was (a duplicate or a redelivery)."""
    claimed = await session.execute(
        insert(ProcessedEvent)
        .values(consumer=consumer, event_id=event_id)
        .on_conflict_do_nothing()
        .returning(ProcessedEvent.event_id)
    )
    return claimed.first() is not None


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
    query = select(KbDocument.organization_id, KbDocument.version, KbDocument.deleted_at).where(
        KbDocument.id == document_id
    )
    row = (await session.execute(query.with_for_update() if lock else query)).first()
    return StoredVersion(row.organization_id, row.version, row.deleted_at is not None) if row else None


PRIOR = "SELECT cortex_document_prior($1, $2, $3, $4, $5, $6)"
INDEX = "SELECT cortex_index_document($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"


async def document_prior(
    connection: Any,
    consumer: str,
    event_id: str,
    organization_id: uuid.UUID,
    document_id: uuid.UUID,
    version: int,
) -> dict[str, list[float]] | None:
    """None when the event is stale (handled before, or not newer than the stored version); else the stored
    passages' embeddings by content hash (`cortex_document_prior`, migration 0013)."""
    # SQLAlchemy's pooled connections decode jsonb (and expect it encoded) as JSON text.
    with_embeddings = True  # the function's flag: every caller wants them now
    prior = await connection.fetchval(PRIOR, consumer, event_id, organization_id, document_id, version, with_embeddings)
    return cast(dict[str, list[float]] | None, prior)


@dataclass(frozen=True)
class Passage:
    heading: str
    text: str
    content_hash: str
    embedding: list[float] | None  # None: stored lexical-only, backfilled later


@dataclass(frozen=True)
class DocumentWrite:
    """What `cortex_index_document` (migration 0013) writes, in one transaction."""

    consumer: str
    event_id: str
    document: dict[str, Any]  # kb_documents' columns, as JSON
    passages: list[Passage]  # in ordinal order
    cites: list[uuid.UUID]
    upload: dict[str, Any] | None  # kb_uploads' columns, as JSON
    model: str | None  # the embeddings' model, which (with their dimension) must be the index's; None: not checked
    report: OutboxMessage


async def write_document(connection: Any, write: DocumentWrite) -> bool:
    """True when written; False for a duplicate event or a version not newer than the stored one."""
    passages = write.passages
    dimension = next((len(p.embedding) for p in passages if p.embedding is not None), None)
    vectors: list[float | None] | None = None
    if dimension is not None:
        vectors = []
        for passage in passages:
            vectors.extend(passage.embedding if passage.embedding is not None else [None] * dimension)
    return bool(
        await connection.fetchval(
            INDEX,
            write.consumer,
            write.event_id,
            json.dumps(write.document, default=str),
            None if write.upload is None else json.dumps(write.upload, default=str),
            write.cites,
            [p.heading for p in passages],
            [p.text for p in passages],
            [p.content_hash for p in passages],
            vectors,
            dimension,
            write.model if vectors is not None else None,  # no vectors (the embedder failed): nothing to check
            write.report.subject,
            write.report.message_id,
            write.report.payload,
        )
    )


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
