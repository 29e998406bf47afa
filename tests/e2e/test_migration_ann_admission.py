"""Migration 0014 over a database that already holds data: organizations over the bound enter the HNSW
graph, the others stay out, and the index is rebuilt partial; its downgrade gives back 0013's index and
functions, which still write documents."""

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from cortex_store.database import make_engine
from cortex_store.migrate import downgrade_async, upgrade_async
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database

pytestmark = pytest.mark.e2e

BOUND = 5000  # migration 0014 admits organizations with more embedded passages than this

ORGANIZATION = "INSERT INTO organizations (id, slug, name) VALUES (:org, :slug, 'm')"
DOCUMENT = """
INSERT INTO kb_documents (id, organization_id, scope, title, status, source, tags, body, content_hash, version,
                          updated_at)
VALUES (:doc, :org, 'org', 't', 'published', 'kb', '{}', 'b', 'h', 1, now())
"""
# `n` passages with vectors of their own (any direction will do: the test reads flags, not neighbours).
PASSAGES = """
INSERT INTO kb_chunks (document_id, organization_id, ordinal, heading, text, content_hash, embedding)
SELECT :doc, :org, i, '', 'passage', i::text,
       (SELECT array_agg(sin(i * 7 + d)) FROM generate_series(1, 384) d)::vector
FROM generate_series(1, :n) i
"""


@pytest.fixture
async def database(migrated: Infrastructure) -> AsyncIterator[str]:
    """A database of this test's own on the session's server, migrated to 0013 only."""
    async with own_database(migrated.database_url, "cx_ann", "0013") as name:
        yield on_database(migrated.database_url, name)


async def organization_with(engine: AsyncEngine, passages: int) -> uuid.UUID:
    org, doc = uuid.uuid4(), uuid.uuid4()
    async with engine.begin() as connection:
        await connection.execute(text("SELECT set_config('cortex.organization_id', :org, true)"), {"org": str(org)})
        await connection.execute(text(ORGANIZATION), {"org": org, "slug": f"m-{org.hex[:12]}"})
        await connection.execute(text(DOCUMENT), {"doc": doc, "org": org})
        await connection.execute(text(PASSAGES), {"doc": doc, "org": org, "n": passages})
    return org


async def scalar(engine: AsyncEngine, sql: str, **params: Any) -> Any:
    async with engine.begin() as connection:
        return await connection.scalar(text(sql), params)


INDEX_DEFINITION = "SELECT indexdef FROM pg_indexes WHERE indexname = 'kb_chunks_embedding_hnsw'"
# Whether the organization is admitted, and how many of its passages are in the graph.
GRAPH_STATE = (
    "SELECT (o.ann_indexed, (SELECT count(*) FROM kb_chunks c WHERE c.organization_id = o.id AND c.in_ann))::text"
    " FROM organizations o WHERE o.id = :org"
)


async def test_upgrade_admits_the_big_organizations_and_downgrade_gives_back_0013(database: str) -> None:
    engine = make_engine(database, pool_size=1)
    try:
        big = await organization_with(engine, BOUND + 1)
        small = await organization_with(engine, 10)

        await upgrade_async(database, "0014")
        assert await scalar(engine, GRAPH_STATE, org=big) == f"(t,{BOUND + 1})"
        assert await scalar(engine, GRAPH_STATE, org=small) == "(f,0)"
        assert str(await scalar(engine, INDEX_DEFINITION)).endswith("WHERE in_ann")

        await downgrade_async(database, "0013")
        assert not str(await scalar(engine, INDEX_DEFINITION)).endswith("WHERE in_ann")  # every passage again
        writes = "SELECT prosrc FROM pg_proc WHERE proname = 'cortex_index_document'"
        assert "ann_indexed" not in str(await scalar(engine, writes))
        assert await scalar(engine, "SELECT count(*) FROM pg_proc WHERE proname = 'cortex_enter_ann'") == 0
        columns = "SELECT count(*) FROM pg_attribute WHERE attname IN ('in_ann', 'ann_indexed') AND NOT attisdropped"
        assert await scalar(engine, columns) == 0

        await upgrade_async(database)  # and up again
        assert await scalar(engine, GRAPH_STATE, org=big) == f"(t,{BOUND + 1})"
    finally:
        await engine.dispose()
