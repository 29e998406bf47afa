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
    """Okapi BM25 over the org's chunks (k1, b as in Lucene/bm25s; idf = ln(1 + (N - df + .5) / (df + .5))).

    A query word may match alone (OR semantics): a long question need not have every word in one passage.
    """
    return f"""
WITH q AS (
    SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', :q))
), corpus AS (
    SELECT count(*)::float AS n, greatest(avg(token_count), 1)::float AS avgdl
    FROM kb_chunks WHERE organization_id = :org
), df AS (
    SELECT p.lexeme, count(*)::float AS df
    FROM kb_postings p JOIN q USING (lexeme)
    WHERE p.organization_id = :org
    GROUP BY p.lexeme
), scored AS (
    SELECT p.document_id, p.chunk_id,
           sum(ln(1 + (corpus.n - df.df + 0.5) / (df.df + 0.5))
               * p.tf * (:k1 + 1) / (p.tf + :k1 * (1 - :b + :b * p.chunk_tokens / corpus.avgdl))) AS score
    FROM kb_postings p JOIN df USING (lexeme) CROSS JOIN corpus
    WHERE p.organization_id = :org{_restrict(where, "p.document_id")}
    GROUP BY p.document_id, p.chunk_id
), best AS (
    SELECT DISTINCT ON (document_id) document_id, chunk_id, score FROM scored ORDER BY document_id, score DESC
)
SELECT document_id, chunk_id, score FROM best ORDER BY score DESC, document_id LIMIT :n
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
