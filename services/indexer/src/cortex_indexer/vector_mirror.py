"""Mirror a document's passage vectors into a vector store of its own (Qdrant).

PostgreSQL stays the record: passages keep their embeddings there too, so the store can be rebuilt
from it and the backfill fills both. The mirror runs inside the indexing transaction: when the store
fails, the transaction rolls back and the event is retried, so the store never misses a committed
change. With pgvector the passages' own rows are the store and nothing is mirrored.
"""

import uuid

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cortex_contracts.vector_store import VectorChunk, VectorStore
from cortex_store.models import KbChunk, KbDocument


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
