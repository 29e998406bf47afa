"""Mirror a document's passage vectors into a vector store of its own (Qdrant).

PostgreSQL stays the record: passages keep their embeddings there too, so the store can be rebuilt
from it and the backfill fills both. The mirror runs inside the indexing transaction. While the store
cannot be reached, the change is committed all the same and the document marked `mirror_pending`; the
backfill mirrors it once the store answers (migration 0019). Searches read every hit back from
PostgreSQL, so the points of a deleted document are never shown meanwhile. With pgvector the passages'
own rows are the store and nothing is mirrored.

The store mirrored to is recorded (`vector_mirror`, migration 0025) with the embedding space: an
indexer started against another one — Qdrant after pgvector, another collection or server, another
model — empties its store and marks every document for the backfill to mirror (`follow_target`).
"""

import logging
import uuid
from typing import Protocol, runtime_checkable

from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.vector_store import VectorChunk, VectorStore, VectorStoreUnavailable
from cortex_store.models import KbChunk, KbDocument

log = logging.getLogger(__name__)

PGVECTOR_TARGET = "pgvector"  # the passages' own rows: nothing to mirror
MIRROR_LOCK_KEY = 0x63786D74  # "cxmt": copies starting at once rebuild the store once
RECORDED_TARGET = text("SELECT target FROM vector_mirror")
MIRROR_TO = text("SELECT cortex_mirror_to(:target, :mirrored)")


@runtime_checkable
class RebuildableStore(Protocol):
    target: str

    async def rebuild(self, dimension: int) -> None: ...


async def follow_target(
    sessions: async_sessionmaker[AsyncSession], store: object | None, model: str, dimension: int
) -> bool:
    """Make the store hold every document of this embedding space, if it was not the one recorded: True
    when it was rebuilt. Raises VectorStoreUnavailable while the store cannot be reached."""
    mirror = store if isinstance(store, RebuildableStore) else None
    target = f"{mirror.target} {model} {dimension}" if mirror else PGVECTOR_TARGET
    async with sessions() as session, session.begin():
        await session.execute(text(f"SELECT pg_advisory_xact_lock({MIRROR_LOCK_KEY})"))
        if await session.scalar(RECORDED_TARGET) == target:
            return False
        if mirror:
            log.warning("the vector store is new to this index (%s): rebuilding it from PostgreSQL", target)
            await mirror.rebuild(dimension)  # emptied before the marks, so that no mirror made meanwhile is lost
        await session.execute(MIRROR_TO, {"target": target, "mirrored": mirror is not None})
    return mirror is not None


async def mirror_document(session: AsyncSession, store: VectorStore, document_id: uuid.UUID) -> None:
    """Make the store hold exactly the document's embedded passages as stored now (none if deleted)."""
    document = (
        await session.execute(
            select(KbDocument.organization_id, KbDocument.work_id, KbDocument.version, KbDocument.deleted_at).where(
                KbDocument.id == document_id
            )
        )
    ).first()
    if document is None:
        return
    if document.deleted_at is not None:
        await store.delete_document(document.organization_id, document_id, document.version)
        return
    passages = await session.execute(
        select(KbChunk.id, KbChunk.ordinal, KbChunk.embedding).where(
            KbChunk.document_id == document_id, KbChunk.embedding.is_not(None)
        )
    )
    chunks = [VectorChunk(row.id, row.ordinal, [float(x) for x in row.embedding]) for row in passages]
    await store.upsert(document.organization_id, document.work_id, document_id, document.version, chunks)


async def mirror_or_defer(session: AsyncSession, store: VectorStore, document_id: uuid.UUID) -> None:
    """Mirror the document now or, while the store cannot be reached, mark it for the backfill to mirror."""
    try:
        await mirror_document(session, store, document_id)
    except VectorStoreUnavailable as exc:
        log.warning("%s: document %s is mirrored once the vector store answers", exc, document_id)
        await session.execute(update(KbDocument).where(KbDocument.id == document_id).values(mirror_pending=True))
