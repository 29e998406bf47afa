"""The `vector_store` plugin protocol: where chunk embeddings live and how the dense leg searches them.

Two stores implement it (libs/vector-stores): pgvector over `kb_chunks.embedding`, and Qdrant. Every
call names one organization; a search never returns another organization's chunks. Per document the
highest `version` wins: a store refuses (returns False for) an upsert older than what it holds.
"""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class VectorChunk:
    """One passage's embedding, as the indexer stored the passage."""

    chunk_id: int
    """`kb_chunks.id` of the passage: what a search hands back to find its text."""
    ordinal: int
    """Position of the passage in its document (0, 1, …)."""
    vector: Sequence[float]


@dataclass(frozen=True, slots=True)
class VectorHit:
    document_id: uuid.UUID
    chunk_id: int
    score: float
    """Cosine similarity: higher is nearer."""


class VectorStoreUnavailable(Exception):
    """The store could not be reached or did not answer (a server down, a timeout): a search goes on without
    its dense leg, as it does when the embedder is down."""


@runtime_checkable
class VectorStore(Protocol):
    name: str
    namespace_per_work: bool
    """True: a store keeps each Work apart and cannot search several Works in one query, so a
    cross-Work search fans out per Work and merges (`cortex_vector_stores.fanout`). False: one
    filtered query covers any set of Works."""

    async def upsert(
        self,
        organization_id: uuid.UUID,
        work_id: uuid.UUID | None,
        document_id: uuid.UUID,
        version: int,
        chunks: Sequence[VectorChunk],
    ) -> bool:
        """Make `chunks` the document's only vectors, unless the store holds a newer version of it or a
        deletion of this one (then nothing changes and False is returned). Idempotent for the same version."""
        ...

    async def delete_document(self, organization_id: uuid.UUID, document_id: uuid.UUID, version: int) -> bool:
        """Remove the document's vectors, unless the store holds a newer version of it or this deletion
        (False). A deletion wins a tie: it removes an upsert of its own version, and that upsert, arriving
        later, is refused."""
        ...

    async def search(
        self,
        organization_id: uuid.UUID,
        vector: Sequence[float],
        k: int,
        *,
        work_ids: frozenset[uuid.UUID] | None = None,
        document_ids: frozenset[uuid.UUID] | None = None,
    ) -> list[VectorHit]:
        """The `k` chunks nearest to `vector`, best first, within the organization — and, when given,
        within documents of those Works (org-wide documents have no Work and are then left out) and
        among those documents. Returns k hits whenever k matching chunks exist."""
        ...

    async def health(self) -> str | None:
        """None when the store answers; otherwise what is wrong."""
        ...

    async def close(self) -> None: ...
