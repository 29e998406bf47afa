"""Recall memory entries: hybrid relevance (BM25 + embeddings, fused by rank) weighted by salience,
within the scope the caller names (session, Work, agent, partitions, tiers) of one organization."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_aggregator.fusion import reciprocal_rank_fusion
from cortex_contracts.memory import EntryFound, EntryLookup, Recalled, RecalledEntry, RecallRequest
from cortex_store.tenancy import org_transaction

CANDIDATES = 100
BM25_K1 = 1.2
BM25_B = 0.75

EmbedQuery = Callable[[str], Awaitable[list[float]]]


@dataclass(frozen=True)
class RecallContext:
    sessions: async_sessionmaker[AsyncSession]
    embed_query: EmbedQuery | None
    rrf_k: int = 60
    salience_weight: float = 0.5  # 0: ignore salience; 1: a fully salient entry scores 1.5x an average one


def _scope(request: RecallRequest) -> tuple[str, dict[str, Any]]:
    clauses = ["m.organization_id = :org"]
    params: dict[str, Any] = {"org": request.organization_id}
    if request.partition:
        clauses.append("m.partition::text = ANY(CAST(:partitions AS text[]))")
        params["partitions"] = [p.value for p in request.partition]
    if request.tier:
        clauses.append("m.tier::text = ANY(CAST(:tiers AS text[]))")
        params["tiers"] = [t.value for t in request.tier]
    for column, value in (
        ("work_id", request.work_id),
        ("memory_session_id", request.memory_session_id),
        ("agent_id", request.agent_id),
    ):
        if value is not None:
            clauses.append(f"m.{column} = :{column}")
            params[column] = value
    return " AND ".join(clauses), params


def _lexical(scope: str) -> str:
    """BM25 with the corpus statistics of the scope itself."""
    return f"""
WITH q AS (
    SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) AS tsq,
           array_agg(lexeme) AS lexemes
    FROM unnest(to_tsvector('english', :q))
), corpus AS (
    SELECT count(*)::float AS n, greatest(avg(m.token_count), 1)::float AS avgdl FROM memory_entry m WHERE {scope}
), terms AS (
    SELECT m.id, m.token_count, u.lexeme, array_length(u.positions, 1) AS tf
    FROM memory_entry m, q, unnest(m.tsv) u
    WHERE {scope} AND m.tsv @@ q.tsq AND u.lexeme = ANY(q.lexemes)
), df AS (
    SELECT lexeme, count(*)::float AS df FROM terms GROUP BY lexeme
)
SELECT t.id, sum(ln(1 + (corpus.n - df.df + 0.5) / (df.df + 0.5))
                 * t.tf * (:k1 + 1) / (t.tf + :k1 * (1 - :b + :b * t.token_count / corpus.avgdl))) AS score
FROM terms t JOIN df USING (lexeme) CROSS JOIN corpus
GROUP BY t.id ORDER BY score DESC, t.id LIMIT :n
"""


def _dense(scope: str) -> str:
    return f"""
SELECT m.id, 1 - (m.embedding <=> CAST(:qvec AS vector)) AS score FROM memory_entry m
WHERE {scope} AND m.embedding IS NOT NULL
ORDER BY (m.embedding <=> CAST(:qvec AS vector)) + 0 LIMIT :n
"""


ENTRIES = """
SELECT m.id, m.content, m.partition::text AS partition, m.tier::text AS tier, m.work_id, m.memory_session_id,
       m.agent_id, m.agent_run_id, m.metadata, m.salience, m.created_at
FROM memory_entry m WHERE m.organization_id = :org AND m.id = ANY(:ids)
"""


async def recall(ctx: RecallContext, request: RecallRequest) -> Recalled:
    scope, params = _scope(request)
    vector = await ctx.embed_query(request.q) if ctx.embed_query else None
    async with org_transaction(ctx.sessions, request.organization_id) as session:
        lexical = list(
            await session.execute(
                text(_lexical(scope)),
                {**params, "q": request.q, "n": CANDIDATES, "k1": BM25_K1, "b": BM25_B},
            )
        )
        dense: list[Any] = []
        if vector is not None:
            qvec = "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
            dense = list(await session.execute(text(_dense(scope)), {**params, "qvec": qvec, "n": CANDIDATES}))
        fused = reciprocal_rank_fusion([([r.id for r in lexical], 1.0), ([r.id for r in dense], 1.0)], k=ctx.rrf_k)
        rows = {
            r.id: r
            for r in await session.execute(
                text(ENTRIES), {"org": request.organization_id, "ids": [doc for doc, _ in fused]}
            )
        }
    weighted = [
        (rows[entry_id], score * (1 + ctx.salience_weight * (rows[entry_id].salience - 0.5)))
        for entry_id, score in fused
        if entry_id in rows
    ]
    weighted.sort(key=lambda pair: pair[1], reverse=True)
    return Recalled(
        items=[
            RecalledEntry(
                id=row.id,
                content=row.content,
                partition=row.partition,
                tier=row.tier,
                work_id=row.work_id,
                memory_session_id=row.memory_session_id,
                agent_id=row.agent_id,
                agent_run_id=row.agent_run_id,
                metadata=row.metadata,
                salience=row.salience,
                score=score,
                created_at=row.created_at,
            )
            for row, score in weighted[: request.limit]
        ]
    )


async def entry_exists(sessions: async_sessionmaker[AsyncSession], lookup: EntryLookup) -> EntryFound:
    async with org_transaction(sessions, lookup.organization_id) as session:
        found = await session.scalar(
            text("SELECT EXISTS (SELECT 1 FROM memory_entry WHERE organization_id = :org AND id = :id)"),
            {"org": lookup.organization_id, "id": lookup.entry_id},
        )
    return EntryFound(found=bool(found))
