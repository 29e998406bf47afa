"""Chunk vectors in PostgreSQL: `kb_chunks.embedding` (pgvector, HNSW with cosine distance).

The chunk rows belong to the indexer, which writes their embeddings in the same transaction as the
passages themselves — so with this store the indexer needs no second write. `upsert` sets the
embeddings of chunk rows that already exist (a backfill after the embedder was down, a re-embed with
a new model) and `delete_document` clears them; both lock the document row like the indexer does,
and change nothing unless the stored document is of the version they were given or older.

Search: the embedded pgvector is 0.6, whose HNSW scan applies a WHERE filter after the graph walk and
has no iterative scan, so a filter that keeps few rows (a small organization beside a big one, one
Work) gets fewer than k rows back. Up to `exact_scan_max_chunks` candidate chunks are therefore
scanned exactly; above that the graph is walked and, when it comes back short, the exact scan runs.
Only organizations the indexer admitted to the graph (migration 0014) walk it; the others scan.

The store runs each call in its own transaction bound to the organization (row-level security): it
needs the service's session factory, given with `bind(sessions)` by the composition root.
"""

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_contracts.vector_store import VectorChunk, VectorHit
from cortex_store.ann_graph import TO_THE_GRAPH, graph_candidates
from cortex_store.tenancy import org_transaction
from cortex_store.vector_text import vector_literal
from cortex_vector_stores.settings import PgVectorSettings

HNSW_EF_SEARCH_MAX = 1000  # pgvector's upper bound

_LOCK_DOCUMENT = text(
    "SELECT version FROM kb_documents WHERE id = :doc AND organization_id = :org AND deleted_at IS NULL FOR UPDATE"
)
_SET_EMBEDDING = text(
    "UPDATE kb_chunks SET embedding = CAST(:vec AS vector)"
    " WHERE id = :id AND document_id = :doc AND organization_id = :org"
)
_CLEAR_OTHERS = text(
    "UPDATE kb_chunks SET embedding = NULL"
    " WHERE document_id = :doc AND organization_id = :org AND id <> ALL(CAST(:ids AS bigint[]))"
)


def _restrict(work_ids: frozenset[uuid.UUID] | None, document_ids: frozenset[uuid.UUID] | None) -> str:
    sql = ""
    if work_ids is not None:
        sql += (
            " AND c.document_id IN (SELECT d.id FROM kb_documents d"
            " WHERE d.organization_id = :org AND d.work_id = ANY(CAST(:works AS uuid[])))"
        )
    if document_ids is not None:
        sql += " AND c.document_id = ANY(CAST(:docs AS uuid[]))"
    return sql


def _nearest(restrict: str, *, exact: bool) -> str:
    # `+ 0` hides the distance from the planner, so it scans the candidate rows exactly instead of
    # walking the HNSW graph; a walk says `c.in_ann`, the graph's predicate (migration 0014).
    distance = "c.embedding <=> CAST(:qvec AS vector)"
    return f"""
SELECT c.document_id, c.id AS chunk_id, 1 - ({distance}) AS score
FROM kb_chunks c
WHERE c.organization_id = :org AND c.embedding IS NOT NULL{"" if exact else " AND c.in_ann"}{restrict}
ORDER BY {f"({distance}) + 0" if exact else distance}
LIMIT :k
"""


class PgVectorStore:
    name = "pgvector"
    namespace_per_work = False

    def __init__(self, settings: PgVectorSettings) -> None:
        self.settings = settings
        self._sessions: async_sessionmaker[AsyncSession] | None = None
        self.exact_fallbacks = 0
        """Searches whose HNSW walk came back short and ran exactly (a metric; tests read it)."""

    def bind(self, sessions: async_sessionmaker[AsyncSession]) -> "PgVectorStore":
        self._sessions = sessions
        return self

    def _bound(self) -> async_sessionmaker[AsyncSession]:
        if self._sessions is None:
            raise RuntimeError("the pgvector store needs the service's sessions: call bind(sessions) first")
        return self._sessions

    async def _writable(self, session: AsyncSession, org: uuid.UUID, doc: uuid.UUID, version: int) -> bool | None:
        """Locks the document row: None when there is none (or it is deleted), else whether its stored
        version is `version` or older."""
        stored = await session.scalar(_LOCK_DOCUMENT, {"doc": doc, "org": org})
        return None if stored is None else int(stored) <= version

    async def upsert(
        self,
        organization_id: uuid.UUID,
        work_id: uuid.UUID | None,
        document_id: uuid.UUID,
        version: int,
        chunks: Sequence[VectorChunk],
    ) -> bool:
        """Embeddings for the chunk rows of the stored version `version` (the rows are the indexer's)."""
        async with org_transaction(self._bound(), organization_id) as session:
            stored = await session.scalar(_LOCK_DOCUMENT, {"doc": document_id, "org": organization_id})
            if stored is None or int(stored) != version:
                return False  # a newer version is stored, or this one is not stored yet
            params: dict[str, Any] = {"doc": document_id, "org": organization_id}
            if chunks:
                await session.execute(
                    _SET_EMBEDDING,
                    [{**params, "id": chunk.chunk_id, "vec": vector_literal(chunk.vector)} for chunk in chunks],
                )
            await session.execute(_CLEAR_OTHERS, {**params, "ids": [chunk.chunk_id for chunk in chunks]})
        return True

    async def delete_document(self, organization_id: uuid.UUID, document_id: uuid.UUID, version: int) -> bool:
        async with org_transaction(self._bound(), organization_id) as session:
            writable = await self._writable(session, organization_id, document_id, version)
            if writable is False:
                return False
            await session.execute(_CLEAR_OTHERS, {"doc": document_id, "org": organization_id, "ids": []})
        return True

    async def search(
        self,
        organization_id: uuid.UUID,
        vector: Sequence[float],
        k: int,
        *,
        work_ids: frozenset[uuid.UUID] | None = None,
        document_ids: frozenset[uuid.UUID] | None = None,
    ) -> list[VectorHit]:
        if k < 1 or work_ids == frozenset() or document_ids == frozenset():
            return []
        restrict = _restrict(work_ids, document_ids)
        params: dict[str, Any] = {"org": organization_id, "qvec": vector_literal(vector), "k": k}
        if work_ids is not None:
            params["works"] = sorted(work_ids)
        if document_ids is not None:
            params["docs"] = sorted(document_ids)
        async with org_transaction(self._bound(), organization_id) as session:
            cap = max(self.settings.exact_scan_max_chunks, k) + 1
            chunks = int(await session.scalar(graph_candidates(restrict), params | {"cap": cap}) or 0)
            if chunks > self.settings.exact_scan_max_chunks:
                ef_search = min(HNSW_EF_SEARCH_MAX, max(self.settings.hnsw_ef_search, k))
                await session.execute(TO_THE_GRAPH, {"ef": str(ef_search)})
                hits = _hits(await session.execute(text(_nearest(restrict, exact=False)), params))
                if len(hits) >= min(k, chunks):
                    return hits
                self.exact_fallbacks += 1
            return _hits(await session.execute(text(_nearest(restrict, exact=True)), params))

    async def health(self) -> str | None:
        try:
            async with self._bound()() as session:
                await session.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'vector'"))
        except Exception as exc:  # noqa: BLE001 - any failure is the answer, not a crash
            return f"pgvector: {exc}"
        return None

    async def close(self) -> None:
        """Nothing of its own to close: the engine belongs to the service."""


def _hits(rows: Any) -> list[VectorHit]:
    return [VectorHit(row.document_id, int(row.chunk_id), float(row.score)) for row in rows]


def create() -> PgVectorStore:
    """The `pgvector` vector_store plugin, configured from `CORTEX_PGVECTOR_*`; `bind(sessions)` it
    before use."""
    return PgVectorStore(PgVectorSettings())
