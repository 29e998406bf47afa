"""The HNSW graph holds only organizations admitted to it (migration 0014), each with all its passages.

Documents are written by the indexer's own `index_document` (one `cortex_index_document` call), and
organizations admitted by its own admission pass or function, on the session's PostgreSQL.
"""

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_aggregator import retrieval
from cortex_aggregator.filters import DocumentFilter
from cortex_contracts.documents import DocumentUpserted
from cortex_indexer.ann_admission import ENTER, AnnAdmission
from cortex_indexer.indexing import EventMeta, IndexingContext, index_document
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.tenancy import org_transaction
from cortex_store.vector_text import vector_literal
from tests.conftest import Org
from tests.infrastructure import Infrastructure
from tests.reads import reads_of

pytestmark = pytest.mark.e2e

Sessions = async_sessionmaker[AsyncSession]
NO_FILTER = DocumentFilter("")
# Index scans of the graph by this transaction so far.
HNSW_SCANS_SO_FAR = text("SELECT pg_stat_get_xact_numscans('kb_chunks_embedding_hnsw'::regclass)")


def vector_of(passage: str) -> list[float]:
    """A unit vector of its own for every text: the nearest passage to a text's vector is that text."""
    seed = int.from_bytes(hashlib.sha256(passage.encode()).digest()[:8], "big")
    vector = np.random.default_rng(seed).standard_normal(384)
    return [float(x) for x in vector / np.linalg.norm(vector)]


async def embed(texts: list[str]) -> list[list[float]]:
    return [vector_of(t) for t in texts]


@pytest.fixture
async def sessions(migrated: Infrastructure) -> AsyncIterator[Sessions]:
    engine = make_engine(migrated.app_database_url, pool_size=4)
    yield make_sessionmaker(engine)
    await engine.dispose()


@pytest.fixture
def ctx(sessions: Sessions) -> IndexingContext:
    return IndexingContext(sessions=sessions, embed=embed, consumer=f"test-{uuid.uuid4()}")


async def write(ctx: IndexingContext, org: Org, body: str) -> uuid.UUID:
    document_id = uuid.uuid4()
    meta = EventMeta(str(uuid.uuid4()), org.id, None, datetime.now(UTC))
    doc = DocumentUpserted(document_id=document_id, organization_id=org.id, version=1, title="Note", body=body)
    assert await index_document(ctx, meta, doc, body) is not None
    return document_id


async def graph_state(sessions: Sessions, org: Org) -> tuple[bool, list[bool]]:
    """Whether the organization is admitted, and each of its passages' `in_ann`."""
    async with org_transaction(sessions, org.id) as session:
        admitted = await session.scalar(text("SELECT ann_indexed FROM organizations WHERE id = :o"), {"o": org.id})
        marks = (await session.scalars(text("SELECT in_ann FROM kb_chunks ORDER BY id"))).all()
    return bool(admitted), list(marks)


async def test_an_organization_enters_the_graph_once_past_the_bound_with_every_passage(
    org: Org, ctx: IndexingContext, sessions: Sessions
) -> None:
    admission = AnnAdmission(sessions, min_chunks=3)
    for n in range(3):
        await write(ctx, org, f"Passage number {n} about the quarterly plan.")
    assert org.id not in await admission.run_pass()  # 3 embedded passages: not more than the bound
    assert await graph_state(sessions, org) == (False, [False] * 3)

    await write(ctx, org, "A fourth passage, about the hiring plan.")
    assert org.id in await admission.run_pass()
    assert await graph_state(sessions, org) == (True, [True] * 4)

    await write(ctx, org, "Written once admitted: straight into the graph.")
    assert await graph_state(sessions, org) == (True, [True] * 5)
    assert org.id not in await admission.run_pass()  # admitted once, never asked again


async def waiting_on_advisory_lock(sessions: Sessions) -> bool:
    async with sessions() as session:
        waiting = await session.scalar(
            text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'")
        )
    return bool(waiting)


async def test_a_document_written_while_its_organization_is_admitted_joins_the_graph(
    org: Org, ctx: IndexingContext, sessions: Sessions
) -> None:
    await write(ctx, org, "The first passage of a growing organization.")
    await write(ctx, org, "The second passage of a growing organization.")
    writing: asyncio.Task[uuid.UUID] | None = None
    async with sessions() as admitting, admitting.begin():
        assert await admitting.scalar(ENTER, {"org": org.id, "min_chunks": 1})  # admitted, not committed yet
        writing = asyncio.create_task(write(ctx, org, "Written during the admission."))
        async with asyncio.timeout(10):
            while not await waiting_on_advisory_lock(sessions):
                await asyncio.sleep(0.02)
        # It waits to read the flag until the admission ends: read now, it would say "outside".
        assert not writing.done()
    await writing
    assert await graph_state(sessions, org) == (True, [True] * 3)


async def walk_plan(sessions: Sessions, org: Org, query: list[float]) -> str:
    async with org_transaction(sessions, org.id) as session:
        # Sorting priced out: the planner walks the graph whenever the statement lets it.
        await session.execute(text("SET LOCAL enable_sort = off"))
        statement = "EXPLAIN " + retrieval._dense(NO_FILTER, exact=False)
        params = {"org": org.id, "qvec": vector_literal(query), "k": 9, "n": 3}
        return "\n".join(row[0] for row in await session.execute(text(statement), params))


async def test_only_an_admitted_organization_walks_and_its_walk_reads_the_graph(
    org: Org, make_org: Any, ctx: IndexingContext, sessions: Sessions
) -> None:
    documents = [await write(ctx, org, f"Passage {n}: notes on topic {n}.") for n in range(6)]
    async with org_transaction(sessions, org.id) as session:
        assert not await retrieval.walks_graph(await reads_of(session), org.id, NO_FILTER, 0)  # outside: scans
    async with sessions() as session, session.begin():
        assert await session.scalar(ENTER, {"org": org.id, "min_chunks": 5})

    async with org_transaction(sessions, org.id) as session:  # the query: document 4's own vector
        stored = await session.scalar(
            text("SELECT embedding::real[] FROM kb_chunks WHERE document_id = :d"), {"d": documents[4]}
        )
    query = [float(x) for x in stored]
    assert "kb_chunks_embedding_hnsw" in await walk_plan(sessions, org, query)
    async with org_transaction(sessions, org.id) as session:
        reads = await reads_of(session)
        assert await retrieval.walks_graph(reads, org.id, NO_FILTER, 5)
        assert not await retrieval.walks_graph(reads, org.id, NO_FILTER, 6)  # admitted, yet few enough to scan
        # As the aggregator plans an unfiltered search: generically, not knowing the org. Left to choose,
        # the planner sorts six rows rather than walk; told to walk, it must.
        await session.execute(text("SELECT set_config('plan_cache_mode', 'force_generic_plan', true)"))
        walked = await retrieval.dense_hits(reads, org.id, query, NO_FILTER, 3, exact=False)
        graph_scans = await session.scalar(HNSW_SCANS_SO_FAR)
        scanned = await retrieval.dense_hits(reads, org.id, query, NO_FILTER, 3, exact=True)
    assert graph_scans >= 1  # (a second, wider walk when other orgs' vectors crowd this one's out)
    assert [hit.document_id for hit in walked] == [hit.document_id for hit in scanned]
    assert walked[0].document_id == documents[4]

    other = await make_org()  # another organization, never admitted: its passages stay out of the graph
    await write(ctx, other, "An outsider's passage.")
    assert await graph_state(sessions, other) == (False, [False])
