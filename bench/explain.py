"""EXPLAIN ANALYZE of the aggregator's own retrieval statements, with the parameters it would bind.

The statements are imported from the aggregator, so the plans are those of the code under test. They
run through SQLAlchemy + asyncpg like the aggregator's (server-side prepared statements with bound
parameters), each twice — the second, warm run is the one kept.
"""

import re
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import TextClause, text

from cortex_aggregator import items, retrieval
from cortex_aggregator.feed import CANDIDATES_PER_LEG
from cortex_store.database import make_engine

EXECUTION_TIME = re.compile(r"Execution Time: ([0-9.]+) ms")


@dataclass(frozen=True)
class Plan:
    statement: str
    execution_ms: float | None
    text: str


def vector_literal(vector: list[float]) -> str:
    """The literal the aggregator binds for a query vector (retrieval.dense_hits)."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def _explain(statement: TextClause) -> TextClause:
    return text("EXPLAIN (ANALYZE, BUFFERS, SETTINGS) " + statement.text)


async def _run(engine: Any, name: str, statement: TextClause, params: dict[str, Any], ef_search: int | None) -> Plan:
    lines: list[str] = []
    for _ in range(2):
        async with engine.begin() as connection:
            if ef_search is not None:
                await connection.execute(text(f"SET LOCAL hnsw.ef_search = {ef_search}"))
            lines = [row[0] for row in await connection.execute(_explain(statement), params)]
    plan = "\n".join(lines)
    found = EXECUTION_TIME.search(plan)
    return Plan(name, float(found.group(1)) if found else None, plan)


async def retrieval_plans(database_url: str, org: uuid.UUID, q: str, vector: list[float]) -> list[Plan]:
    """Plans of every statement one search runs, at the aggregator's default depth."""
    n = CANDIDATES_PER_LEG
    dense = {"org": org, "qvec": vector_literal(vector), "k": n * 3}
    ef_search = min(retrieval.HNSW_EF_SEARCH_MAX, max(retrieval.HNSW_EF_SEARCH, n * 3))
    engine = make_engine(database_url, pool_size=1)
    try:
        plans = [
            await _run(engine, "lexical", retrieval.LEXICAL, {"org": org, "q": q, "n": n}, None),
            await _run(engine, "embedded chunk count", retrieval.EMBEDDED_CHUNKS, {"org": org}, None),
            await _run(engine, "dense exact", retrieval.DENSE_EXACT, dense, None),
            await _run(engine, f"dense hnsw (ef_search={ef_search})", retrieval.DENSE_HNSW, dense, ef_search),
        ]
        async with engine.connect() as connection:
            rows = list(await connection.execute(retrieval.LEXICAL, {"org": org, "q": q, "n": 20}))
        documents = [row.document_id for row in rows]
        chunks = [row.chunk_id for row in rows]
        plans.append(await _run(engine, "items by id (20)", items.BY_IDS, {"org": org, "ids": documents}, None))
        plans.append(await _run(engine, "chunk texts (20)", items.CHUNK_TEXTS, {"org": org, "ids": chunks}, None))
    finally:
        await engine.dispose()
    return plans
