"""The two legs of hybrid search, each returning the best chunk per document, best first.

Every statement is bounded by one organization id.
"""

import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

HNSW_EF_SEARCH = 200
HNSW_EF_SEARCH_MAX = 1000  # pgvector's upper bound


@dataclass(frozen=True)
class Hit:
    document_id: uuid.UUID
    chunk_id: int
    score: float


# Any query word may match (OR of its lexemes): a long natural-language question must not need
# every one of its words in one passage.
LEXICAL = text("""
WITH query AS (
    SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) AS tsq
    FROM unnest(to_tsvector('english', :q))
), best AS (
    SELECT DISTINCT ON (c.document_id) c.document_id, c.id AS chunk_id, ts_rank(c.tsv, query.tsq, 1) AS score
    FROM kb_chunks c, query
    WHERE c.organization_id = :org AND c.tsv @@ query.tsq
    ORDER BY c.document_id, score DESC
)
SELECT document_id, chunk_id, score FROM best ORDER BY score DESC, document_id LIMIT :n
""")

# `+ 0` hides the distance from the planner, so it scans the org's rows exactly instead of the
# HNSW index (which filters after the graph walk and can return too few rows for a small org).
DENSE_EXACT = text("""
WITH nearest AS (
    SELECT document_id, id AS chunk_id, (embedding <=> CAST(:qvec AS vector)) AS distance
    FROM kb_chunks
    WHERE organization_id = :org AND embedding IS NOT NULL
    ORDER BY (embedding <=> CAST(:qvec AS vector)) + 0
    LIMIT :k
)
SELECT DISTINCT ON (document_id) document_id, chunk_id, 1 - distance AS score
FROM nearest ORDER BY document_id, distance
""")

DENSE_HNSW = text("""
WITH nearest AS (
    SELECT document_id, id AS chunk_id, (embedding <=> CAST(:qvec AS vector)) AS distance
    FROM kb_chunks
    WHERE organization_id = :org AND embedding IS NOT NULL
    ORDER BY embedding <=> CAST(:qvec AS vector)
    LIMIT :k
)
SELECT DISTINCT ON (document_id) document_id, chunk_id, 1 - distance AS score
FROM nearest ORDER BY document_id, distance
""")

EMBEDDED_CHUNKS = text("SELECT count(*) FROM kb_chunks WHERE organization_id = :org AND embedding IS NOT NULL")


def _hits(rows: object) -> list[Hit]:
    return [Hit(row.document_id, row.chunk_id, float(row.score)) for row in rows]  # type: ignore[attr-defined]


async def lexical_hits(session: AsyncSession, org: uuid.UUID, q: str, n: int) -> list[Hit]:
    return _hits(await session.execute(LEXICAL, {"org": org, "q": q, "n": n}))


async def embedded_chunk_count(session: AsyncSession, org: uuid.UUID) -> int:
    return int(await session.scalar(EMBEDDED_CHUNKS, {"org": org}) or 0)


async def dense_hits(
    session: AsyncSession,
    org: uuid.UUID,
    vector: list[float],
    n: int,
    *,
    exact: bool,
) -> list[Hit]:
    """Top `n` documents by their nearest chunk. Approximate (HNSW) for big orgs, exact otherwise or
    whenever the approximate walk came back short."""
    params = {"org": org, "qvec": "[" + ",".join(f"{x:.7g}" for x in vector) + "]", "k": n * 3}
    if not exact:
        ef_search = min(HNSW_EF_SEARCH_MAX, max(HNSW_EF_SEARCH, n * 3))
        await session.execute(text(f"SET LOCAL hnsw.ef_search = {ef_search}"))
        hits = _hits(await session.execute(DENSE_HNSW, params))
        if len(hits) >= n:
            return sorted(hits, key=lambda hit: hit.score, reverse=True)[:n]
    hits = _hits(await session.execute(DENSE_EXACT, params))
    return sorted(hits, key=lambda hit: hit.score, reverse=True)[:n]
