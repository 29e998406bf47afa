"""The two legs of hybrid search, each returning the best chunk per document, best first.

Every statement is bounded by one organization id, and by the facet filters when there are any.
"""

import uuid
from dataclasses import dataclass
from typing import Any

from cortex_aggregator.corpus_stats import Corpus
from cortex_aggregator.filters import DocumentFilter
from cortex_aggregator.lexical_index import SCORE_DECIMALS
from cortex_store.ann_graph import graph_candidates
from cortex_store.org_reads import OrgReads
from cortex_store.vector_text import vector_literal

HNSW_EF_SEARCH = 150  # the first pages' need (k = 3 x feed.CANDIDATES_PER_LEG)
HNSW_EF_SEARCH_MAX = 1000  # pgvector's upper bound


@dataclass(frozen=True)
class Hit:
    document_id: uuid.UUID
    chunk_id: int | None  # None: ranked as a whole document (BM25 from memory); its passage is picked later
    score: float


def _restrict(where: DocumentFilter, column: str = "c.document_id") -> str:
    if not where.active:
        return ""
    return f" AND {column} IN (SELECT d.id FROM kb_documents d WHERE d.organization_id = :org{where.sql})"


def _lexical(where: DocumentFilter) -> str:
    """Okapi BM25 over the org's documents (k1, b and idf = ln(1 + (N - df + .5) / (df + .5)) as in
    Lucene and bm25s). Term frequencies add up over a document's passages; the passage shown is the one
    where a query word weighs most. Any query word may match alone: a long question need not have every
    word in one document, and a word the question repeats counts as often as it is repeated.

    Only the query words' postings are read, through the postings key (an index-only scan: the key
    carries every column used here), once; document frequencies come from the same rows, so df counts
    every document of the org while the facet filters restrict only which documents are ranked. Hash
    aggregates throughout: nothing is sorted but the top `n`. k1 and b are cast: left to infer,
    PostgreSQL types them as integers from `:k1 + 1`, and 1.5 and 0.75 arrive as 1 and 0. The corpus
    statistics (N, average length) are parameters (corpus_stats.py: a big org's are remembered for a
    while), so a word's df may exceed a remembered N by a few documents: the idf takes the larger.
    Scores are rounded to `SCORE_DECIMALS` places as numpy rounds them in memory (scaled, rounded half to
    even, scaled back): the hash aggregate sums a document's words in no fixed order, and equal scores
    differing in the last bit ranked by that noise, not by id, so a page ranked here and the next ranked
    in memory repeated or skipped documents (QA 43).
    """
    scale = f"CAST(1e{SCORE_DECIMALS} AS float8)"
    return f"""
WITH q AS MATERIALIZED (
    SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS qtf
    FROM unnest(to_tsvector('english', :q)) u
), postings AS MATERIALIZED (
    SELECT p.document_id, p.chunk_id, p.lexeme, p.tf, p.document_tokens
    FROM kb_postings p
    WHERE p.organization_id = :org AND p.lexeme = ANY(ARRAY(SELECT lexeme FROM q))
), terms AS MATERIALIZED (
    SELECT document_id, lexeme, sum(tf)::float8 AS tf, max(document_tokens)::float8 AS dl
    FROM postings GROUP BY document_id, lexeme
), corpus AS (
    SELECT CAST(:corpus_documents AS float8) AS n, CAST(:corpus_average_tokens AS float8) AS avgdl
), weights AS (
    SELECT t.lexeme,
           min(q.qtf) * ln(1 + (greatest(min(corpus.n), count(*)) - count(*) + 0.5) / (count(*) + 0.5)) AS w
    FROM terms t JOIN q USING (lexeme) CROSS JOIN corpus
    GROUP BY t.lexeme
), ranked AS (
    SELECT t.document_id,
           round(sum(w.w * t.tf * (CAST(:k1 AS float8) + 1)
               / (t.tf + CAST(:k1 AS float8) * (1 - CAST(:b AS float8) + CAST(:b AS float8) * t.dl / corpus.avgdl))
           ) * {scale}) / {scale} AS score
    FROM terms t JOIN weights w USING (lexeme) CROSS JOIN corpus
    WHERE true{_restrict(where, "t.document_id")}
    GROUP BY t.document_id ORDER BY score DESC, t.document_id LIMIT :n
), shown AS (
    SELECT DISTINCT ON (r.document_id) r.document_id, p.chunk_id, r.score
    FROM ranked r JOIN postings p USING (document_id) JOIN weights w USING (lexeme)
    ORDER BY r.document_id, w.w * p.tf DESC, p.chunk_id
)
SELECT document_id, chunk_id, score FROM shown ORDER BY score DESC, document_id
"""


def _dense(where: DocumentFilter, *, exact: bool) -> str:
    """The `n` best documents by their nearest of the `k` nearest chunks, best first; the distance
    computed once per chunk (each computation reads the whole vector). Exact: the inner `OFFSET 0` keeps
    the planner from matching the ORDER BY to the HNSW index, which filters by organization after its
    walk and can return too few rows for a small org. A walk says `c.in_ann`, the HNSW index's predicate
    (migration 0014): only an admitted organization walks, and all its passages are in the graph."""
    graph = "" if exact else " AND c.in_ann"
    candidates = f"""
        SELECT c.document_id, c.id AS chunk_id, c.embedding <=> CAST(:qvec AS vector) AS distance
        FROM kb_chunks c
        WHERE c.organization_id = :org AND c.embedding IS NOT NULL{graph}{_restrict(where)}"""
    nearest = (
        f"SELECT * FROM ({candidates}\n        OFFSET 0\n    ) scored ORDER BY distance LIMIT :k"
        if exact
        else f"{candidates}\n        ORDER BY distance LIMIT :k"
    )
    return f"""
WITH nearest AS (
    {nearest}
), best AS (
    SELECT DISTINCT ON (document_id) document_id, chunk_id, 1 - distance AS score
    FROM nearest ORDER BY document_id, distance
)
SELECT document_id, chunk_id, score FROM best ORDER BY score DESC, document_id LIMIT :n
"""


def _hits(rows: Any) -> list[Hit]:
    return [Hit(row.document_id, row.chunk_id, float(row.score)) for row in rows]


def _best_first(hits: list[Hit]) -> list[Hit]:
    return sorted(hits, key=lambda hit: (-hit.score, hit.document_id))


BM25_K1 = 1.5
BM25_B = 0.75


def _lexical_params(org: uuid.UUID, q: str, where: DocumentFilter, n: int, corpus: Corpus) -> dict[str, Any]:
    statistics = {"corpus_documents": corpus.documents, "corpus_average_tokens": corpus.average_tokens}
    return {"org": org, "q": q, "n": n, "k1": BM25_K1, "b": BM25_B, **statistics, **where.params}


def _dense_params(org: uuid.UUID, vector: list[float], where: DocumentFilter, n: int) -> dict[str, Any]:
    return {"org": org, "qvec": vector_literal(vector), "k": n * 3, "n": n, **where.params}


async def lexical_hits(
    reads: OrgReads, org: uuid.UUID, q: str, where: DocumentFilter, n: int, corpus: Corpus
) -> list[Hit]:
    return _hits(await reads.fetch(_lexical(where), _lexical_params(org, q, where, n, corpus)))


async def hybrid_hits(
    reads: OrgReads,
    org: uuid.UUID,
    q: str,
    vector: list[float],
    where: DocumentFilter,
    n: int,
    corpus: Corpus,
    *,
    exact: bool,
) -> tuple[list[Hit], list[Hit]]:
    """Both legs in one round trip: (lexical, dense), each best first. The dense leg as `dense_hits` does it
    (a short HNSW walk, or a page deeper than its ef_search allows, is answered by `dense_hits` after)."""
    if not exact and n * 3 > HNSW_EF_SEARCH:
        return await lexical_hits(reads, org, q, where, n, corpus), await dense_hits(
            reads, org, vector, where, n, exact=False
        )
    if not exact:
        await reads.walk_with(HNSW_EF_SEARCH)
    statement = (
        f"SELECT 'lexical' AS leg, document_id, chunk_id, score FROM ({_lexical(where)}) lexical\n"
        f"UNION ALL\nSELECT 'dense', document_id, chunk_id, score FROM ({_dense(where, exact=exact)}) dense"
    )
    params = _lexical_params(org, q, where, n, corpus) | _dense_params(org, vector, where, n)
    rows = await reads.fetch(statement, params)
    lexical = _best_first(_hits(row for row in rows if row.leg == "lexical"))
    dense = _best_first(_hits(row for row in rows if row.leg == "dense"))
    if not exact and len(dense) < n:  # the HNSW walk came back short
        dense = await _wider_walk_or_scan(reads, _dense_params(org, vector, where, n), where, n)
    return lexical, dense


async def walks_graph(reads: OrgReads, org: uuid.UUID, where: DocumentFilter, limit: int) -> bool:
    """Whether the org is in the HNSW graph (admitted by the indexer, migration 0014) and more than
    `limit` of its (filtered) chunks are embedded; counts no further than that, and not at all for an
    org outside the graph."""
    params = {"org": org, "cap": limit + 1, **where.params}
    return int(await reads.fetchval(graph_candidates(_restrict(where)).text, params) or 0) > limit


async def dense_hits(
    reads: OrgReads,
    org: uuid.UUID,
    vector: list[float],
    where: DocumentFilter,
    n: int,
    *,
    exact: bool,
) -> list[Hit]:
    """Top `n` documents by their nearest chunk: approximate (HNSW) for big sets, exact otherwise or
    whenever the approximate walks came back short."""
    params = _dense_params(org, vector, where, n)
    if exact:
        return _hits(await reads.fetch(_dense(where, exact=True), params))
    hits = await _walk(reads, params, where, n * 3)
    return hits if len(hits) >= n else await _wider_walk_or_scan(reads, params, where, n)


async def _walk(reads: OrgReads, params: dict[str, Any], where: DocumentFilter, k: int) -> list[Hit]:
    """The documents of the `k` nearest chunks HNSW finds (ef_search `k`, at least the default)."""
    await reads.walk_with(min(max(k, HNSW_EF_SEARCH), HNSW_EF_SEARCH_MAX))
    return _hits(await reads.fetch(_dense(where, exact=False), params | {"k": k}))


async def _wider_walk_or_scan(reads: OrgReads, params: dict[str, Any], where: DocumentFilter, n: int) -> list[Hit]:
    """After a walk that found fewer than `n` documents: HNSW again, as wide as pgvector walks, then the
    exact scan if that is short too.

    A walk comes back short two ways. The index is shared by every organization and filtered after the
    walk, so a small organization (or a selective filter) keeps few of the chunks walked: only the exact
    scan finds them all. Or the nearest chunks crowd into few documents (near-duplicate passages):
    then the exact scan, taking as many chunks, is just as short, and at 100k chunks costs ~100 ms where
    a wider walk costs a few."""
    if n * 3 < HNSW_EF_SEARCH_MAX:
        hits = await _walk(reads, params, where, HNSW_EF_SEARCH_MAX)
        if len(hits) >= n:
            return hits
    return _hits(await reads.fetch(_dense(where, exact=True), params))
