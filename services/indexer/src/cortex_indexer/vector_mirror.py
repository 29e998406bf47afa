"""Mirror a document's passage vectors into a vector store of its own (Qdrant).

PostgreSQL stays the record: passages keep their embeddings there too, so the store can be rebuilt
from it and the backfill fills both. The mirror runs inside the indexing transaction. While the store
cannot be reached, the change is committed all the same and the document marked `mirror_pending`; the
backfill mirrors it once the store answers (migration 0019). Searches read every hit back from
PostgreSQL, so the points of a deleted document are never shown meanwhile. With pgvector the passages'
own rows are the store and nothing is mirrored.
"""

import logging
import uuid

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cortex_contracts.vector_store import VectorChunk, VectorStore, VectorStoreUnavailable
from cortex_store.models import KbChunk, KbDocument

log = logging.getLogger(__name__)


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
