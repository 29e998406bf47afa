"""The two legs of hybrid search, each returning the best chunk per document, best first.

Every statement is bounded by one organization id, and by the facet filters when there are any.
"""

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from cortex_aggregator.filters import DocumentFilter

HNSW_EF_SEARCH = 200
HNSW_EF_SEARCH_MAX = 1000  # pgvector's upper bound


@dataclass(frozen=True)
class Hit:
    document_id: uuid.UUID
    chunk_id: int
    score: float


def _restrict(where: DocumentFilter, column: str = "c.document_id") -> str:
    if not where.active:
        return ""
    return f" AND {column} IN (SELECT d.id FROM kb_documents d WHERE d.organization_id = :org{where.sql})"


def _lexical(where: DocumentFilter) -> str:
    """Okapi BM25 over the org's documents (k1, b and idf = ln(1 + (N - df + .5) / (df + .5)) as in
    Lucene and bm25s). Term frequencies add up over a document's passages; the passage where the query
    terms weigh most is the one shown. Any query word may match alone: a long question need not have
    every word in one document.
    """
    return f"""
WITH q AS (
    SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', :q))
), corpus AS (
    SELECT count(*)::float AS n, greatest(avg(token_count), 1)::float AS avgdl
    FROM kb_documents WHERE organization_id = :org AND deleted_at IS NULL
), df AS (
    SELECT p.lexeme, count(DISTINCT p.document_id)::float AS df,
           ln(1 + ((SELECT n FROM corpus) - count(DISTINCT p.document_id) + 0.5)
                  / (count(DISTINCT p.document_id) + 0.5)) AS idf
    FROM kb_postings p JOIN q USING (lexeme)
    WHERE p.organization_id = :org
    GROUP BY p.lexeme
), terms AS (
    SELECT p.document_id, p.lexeme, sum(p.tf)::float AS tf, max(p.document_tokens)::float AS dl,
           (array_agg(p.chunk_id ORDER BY p.tf DESC, p.chunk_id))[1] AS chunk_id
    FROM kb_postings p JOIN df USING (lexeme)
    WHERE p.organization_id = :org{_restrict(where, "p.document_id")}
    GROUP BY p.document_id, p.lexeme
)
SELECT t.document_id,
       (array_agg(t.chunk_id ORDER BY df.idf * t.tf DESC))[1] AS chunk_id,
       sum(df.idf * t.tf * (:k1 + 1) / (t.tf + :k1 * (1 - :b + :b * t.dl / corpus.avgdl))) AS score
FROM terms t JOIN df USING (lexeme) CROSS JOIN corpus
GROUP BY t.document_id ORDER BY score DESC, t.document_id LIMIT :n
"""


def _dense(where: DocumentFilter, *, exact: bool) -> str:
    # `+ 0` hides the distance from the planner, so it scans the org's rows exactly instead of walking
    # the HNSW graph (which filters after the walk and can return too few rows for a small org).
    order = "(c.embedding <=> CAST(:qvec AS vector)) + 0" if exact else "c.embedding <=> CAST(:qvec AS vector)"
    return f"""
WITH nearest AS (
    SELECT c.document_id, c.id AS chunk_id, (c.embedding <=> CAST(:qvec AS vector)) AS distance
    FROM kb_chunks c
    WHERE c.organization_id = :org AND c.embedding IS NOT NULL{_restrict(where)}
    ORDER BY {order}
    LIMIT :k
)
SELECT DISTINCT ON (document_id) document_id, chunk_id, 1 - distance AS score
FROM nearest ORDER BY document_id, distance
"""


def _hits(rows: Any) -> list[Hit]:
    return [Hit(row.document_id, row.chunk_id, float(row.score)) for row in rows]


BM25_K1 = 1.5
BM25_B = 0.75


async def lexical_hits(session: AsyncSession, org: uuid.UUID, q: str, where: DocumentFilter, n: int) -> list[Hit]:
    params = {"org": org, "q": q, "n": n, "k1": BM25_K1, "b": BM25_B, **where.params}
    return _hits(await session.execute(text(_lexical(where)), params))


async def embedded_chunk_count(session: AsyncSession, org: uuid.UUID, where: DocumentFilter) -> int:
    statement = text(
        f"SELECT count(*) FROM kb_chunks c WHERE c.organization_id = :org AND c.embedding IS NOT NULL{_restrict(where)}"
    )
    return int(await session.scalar(statement, {"org": org, **where.params}) or 0)


async def dense_hits(
    session: AsyncSession,
    org: uuid.UUID,
    vector: list[float],
    where: DocumentFilter,
    n: int,
    *,
    exact: bool,
) -> list[Hit]:
    """Top `n` documents by their nearest chunk: approximate (HNSW) for big sets, exact otherwise or
    whenever the approximate walk came back short."""
    params = {"org": org, "qvec": "[" + ",".join(f"{x:.7g}" for x in vector) + "]", "k": n * 3, **where.params}
    if not exact:
        ef_search = min(HNSW_EF_SEARCH_MAX, max(HNSW_EF_SEARCH, n * 3))
        await session.execute(text(f"SET LOCAL hnsw.ef_search = {ef_search}"))
        hits = _hits(await session.execute(text(_dense(where, exact=False)), params))
        if len(hits) >= n:
            return sorted(hits, key=lambda hit: hit.score, reverse=True)[:n]
    hits = _hits(await session.execute(text(_dense(where, exact=True)), params))
    return sorted(hits, key=lambda hit: hit.score, reverse=True)[:n]
