"""The dense leg against a vector store of its own (Qdrant): the store ranks, PostgreSQL filters.

The facet filters are resolved to the matching document ids in SQL (bounded by the organization and
its row-level security) and handed to the store as a must-filter, so a selective filter still gets k
results whenever k exist — the store does not know the facets.
"""

import uuid
from collections.abc import Sequence

from cortex_aggregator.filters import DocumentFilter
from cortex_aggregator.retrieval import Hit
from cortex_contracts.vector_store import VectorStore
from cortex_store.org_reads import OrgReads


async def _matching_documents(reads: OrgReads, org: uuid.UUID, where: DocumentFilter) -> frozenset[uuid.UUID]:
    statement = f"SELECT d.id FROM kb_documents d WHERE d.organization_id = :org AND d.deleted_at IS NULL{where.sql}"
    return frozenset(row.id for row in await reads.fetch(statement, {"org": org, **where.params}))


async def store_dense_hits(
    reads: OrgReads,
    store: VectorStore,
    org: uuid.UUID,
    vector: Sequence[float],
    where: DocumentFilter,
    n: int,
) -> list[Hit]:
    """Top `n` documents by their nearest chunk, best first."""
    documents = await _matching_documents(reads, org, where) if where.active else None
    best: dict[uuid.UUID, Hit] = {}
    for hit in await store.search(org, vector, n * 3, document_ids=documents):
        if hit.document_id not in best:  # hits come best first: the first is the document's nearest chunk
            best[hit.document_id] = Hit(hit.document_id, hit.chunk_id, hit.score)
    return list(best.values())[:n]
