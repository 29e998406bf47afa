"""Migration 0015: memory_entry has no HNSW graph (recall scans its scope exactly), a change of dimension
does not build one again, and the downgrade gives 0014's graph and switch function back."""

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from cortex_store.database import make_engine
from cortex_store.migrate import downgrade_async, upgrade_async
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database

pytestmark = pytest.mark.e2e

GRAPHS = "SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%'"


@pytest.fixture
async def database(migrated: Infrastructure) -> AsyncIterator[str]:
    async with own_database(migrated.database_url, "cx_memgraph", "0014") as name:
        yield on_database(migrated.database_url, name)


async def graphs_after_switching(database: str, dimension: int) -> str:
    engine = make_engine(database, pool_size=1)
    try:
        async with engine.begin() as connection:
            switch = text("SELECT cortex_switch_embedding_space('m', :d)")
            assert (await connection.execute(switch, {"d": dimension})).scalar() is True
            return str(await connection.scalar(text(GRAPHS)))
    finally:
        await engine.dispose()


async def test_memory_entries_leave_the_graph_and_a_new_dimension_builds_none(database: str) -> None:
    assert await graphs_after_switching(database, 48) == "kb_chunks_embedding_hnsw,memory_entry_embedding_hnsw"

    await upgrade_async(database, "0015")
    assert await graphs_after_switching(database, 64) == "kb_chunks_embedding_hnsw"

    await downgrade_async(database, "0014")
    engine = make_engine(database, pool_size=1)
    try:
        async with engine.connect() as connection:
            assert await connection.scalar(text(GRAPHS)) == "kb_chunks_embedding_hnsw,memory_entry_embedding_hnsw"
    finally:
        await engine.dispose()
    assert await graphs_after_switching(database, 96) == "kb_chunks_embedding_hnsw,memory_entry_embedding_hnsw"
