"""The facet index answers as of every write committed before the request, on real PostgreSQL.

The aggregator's own functions (`facets`, `feed`) run against a `FacetIndexes` of the test's own, as
the service role under row-level security; documents and catalog rows are written by the owner with
plain asyncpg connections, so each test decides exactly when a transaction gets its id and when it
commits. Every test reads first (the index is loaded), then writes, then reads again: the second read
can only be right if the refresh found the write.
"""

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_aggregator.cursor import CursorCodec
from cortex_aggregator.facet_indexes import FacetIndexes, snapshot_transaction
from cortex_aggregator.facets import facets
from cortex_aggregator.feed import FeedConfig, FeedContext, feed
from cortex_contracts.rpc import Facets, FacetsRequest, FeedFilters, FeedRequest
from cortex_store.database import asyncpg_dsn, make_engine, make_sessionmaker
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e

T0 = datetime(2026, 11, 1, tzinfo=UTC)


@dataclass
class Setup:
    org: uuid.UUID
    sessions: async_sessionmaker[AsyncSession]
    indexes: FacetIndexes
    owner_dsn: str

    async def connect(self) -> asyncpg.Connection:
        connection = await asyncpg.connect(self.owner_dsn)
        await connection.execute("SELECT set_config('cortex.organization_id', $1, false)", str(self.org))
        return connection

    async def facets(self, **filters: list[Any]) -> Facets:
        request = FacetsRequest(organization_id=self.org, filters=FeedFilters.model_validate(filters))
        return await facets(self.indexes, None, request)

    async def types(self, **filters: list[Any]) -> dict[str, int]:
        return {chip.value: chip.count for chip in (await self.facets(**filters)).type}

    async def feed_ids(self, limit: int = 100, **filters: list[Any]) -> list[uuid.UUID]:
        # (no search transaction: the feed without `q` reads the facet index and its own session)
        ctx = FeedContext(None, CursorCodec(b"test"), None, FeedConfig(), self.indexes)
        ids: list[uuid.UUID] = []
        cursor = None
        while True:
            request = FeedRequest(
                organization_id=self.org, filters=FeedFilters.model_validate(filters), limit=limit, cursor=cursor
            )
            page = await feed(ctx, request)
            ids += [item.id for item in page.items]
            if not (cursor := page.next_cursor):
                return ids


@pytest.fixture
async def setup(migrated: Infrastructure) -> AsyncIterator[Setup]:
    org = uuid.uuid4()
    owner = await asyncpg.connect(asyncpg_dsn(migrated.database_url))
    try:
        await owner.execute(
            "INSERT INTO organizations (id, slug, name) VALUES ($1, $2, 'facet index')", org, f"fi-{org.hex[:12]}"
        )
    finally:
        await owner.close()
    engine = make_engine(migrated.app_database_url, pool_size=4)
    sessions = make_sessionmaker(engine)
    try:
        yield Setup(org, sessions, FacetIndexes(sessions), asyncpg_dsn(migrated.database_url))
    finally:
        await engine.dispose()


UPSERT = """
INSERT INTO kb_documents (id, organization_id, scope, work_id, title, doc_class, status, source, tags, body,
                          content_hash, version, updated_at)
VALUES ($1, $2, CASE WHEN $3::uuid IS NULL THEN 'org' ELSE 'work' END, $3, 'doc', $4, 'published', 'kb', $5,
        'body', 'h', 1, $6)
ON CONFLICT (id) DO UPDATE SET doc_class = excluded.doc_class, work_id = excluded.work_id, scope = excluded.scope,
    tags = excluded.tags, updated_at = excluded.updated_at, deleted_at = NULL
RETURNING pg_current_xact_id()::text::bigint AS xid
"""


async def upsert(
    connection: asyncpg.Connection,
    org: uuid.UUID,
    doc_id: uuid.UUID,
    doc_class: str,
    *,
    tags: Sequence[str] = (),
    work: uuid.UUID | None = None,
    at: datetime = T0,
) -> int:
    """Write one document; the id of the writing transaction."""
    xid: int = await connection.fetchval(UPSERT, doc_id, org, work, doc_class, list(tags), at)
    return xid


async def test_a_write_committed_after_a_read_is_counted_by_the_next(setup: Setup) -> None:
    first, second = uuid.uuid4(), uuid.uuid4()
    connection = await setup.connect()
    try:
        await upsert(connection, setup.org, first, "spec", tags=["a"])
        assert await setup.types() == {"spec": 1}  # loaded
        await upsert(connection, setup.org, second, "faq", tags=["a", "b"], at=T0 + timedelta(hours=1))
        assert await setup.types() == {"spec": 1, "faq": 1}
        assert await setup.feed_ids() == [second, first]
        assert {chip.value: chip.count for chip in (await setup.facets(type=["faq"])).tag} == {"a": 1, "b": 1}
        # A rewrite moves the document between values; the feed reorders it.
        await upsert(connection, setup.org, second, "spec", tags=["c"], at=T0 - timedelta(hours=1))
        assert await setup.types() == {"spec": 2}
        assert {chip.value: chip.count for chip in (await setup.facets()).tag} == {"a": 1, "c": 1}
        assert await setup.feed_ids(limit=1) == [first, second]
    finally:
        await connection.close()


async def test_a_soft_deleted_document_leaves_counts_and_feed(setup: Setup) -> None:
    kept, deleted = uuid.uuid4(), uuid.uuid4()
    connection = await setup.connect()
    try:
        await upsert(connection, setup.org, kept, "spec", tags=["x"])
        await upsert(connection, setup.org, deleted, "spec", tags=["x"], at=T0 + timedelta(hours=1))
        assert await setup.types() == {"spec": 2}
        assert await setup.feed_ids() == [deleted, kept]
        # As the indexer's tombstone does: the row stays, marked deleted.
        await connection.execute(
            "UPDATE kb_documents SET deleted_at = now(), updated_at = now(), body = '' WHERE id = $1", deleted
        )
        assert await setup.types() == {"spec": 1}
        assert {chip.value: chip.count for chip in (await setup.facets()).tag} == {"x": 1}
        assert await setup.feed_ids() == [kept]
        assert await setup.feed_ids(tag=["x"]) == [kept]
    finally:
        await connection.close()


async def test_a_transaction_that_commits_after_a_later_one_is_not_missed(setup: Setup) -> None:
    """Transaction A gets its id first and commits last. A read between the two commits sees B only;
    a watermark of the highest id read (or the latest timestamp) would then skip A for good."""
    early, late = uuid.uuid4(), uuid.uuid4()
    a, b = await setup.connect(), await setup.connect()
    try:
        assert await setup.types() == {}  # loaded, empty
        a_transaction = a.transaction()
        await a_transaction.start()
        a_xid = await upsert(a, setup.org, early, "spec")
        async with b.transaction():
            b_xid = await upsert(b, setup.org, late, "faq")
        assert a_xid < b_xid, "A must hold the earlier transaction id"
        assert await setup.types() == {"faq": 1}  # B read, A not committed yet
        assert await setup.feed_ids() == [late]
        await a_transaction.commit()
        assert await setup.types() == {"faq": 1, "spec": 1}
        assert sorted(await setup.feed_ids()) == sorted([early, late])
    finally:
        await a.close()
        await b.close()


async def test_catalog_changes_move_mission_and_team_counts(setup: Setup) -> None:
    work, mission, other_mission, team = uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    connection = await setup.connect()
    try:
        for mission_id, title in ((mission, "M"), (other_mission, "N")):
            await connection.execute(
                "INSERT INTO missions (id, organization_id, title) VALUES ($1, $2, $3)", mission_id, setup.org, title
            )
        await connection.execute(
            "INSERT INTO works (id, organization_id, title, mission_id) VALUES ($1, $2, 'W', $3)",
            work,
            setup.org,
            mission,
        )
        await upsert(connection, setup.org, uuid.uuid4(), "spec", work=work)
        found = await setup.facets()
        assert [(c.value, c.label, c.count) for c in found.mission or []] == [(str(mission), "M", 1)]
        assert found.team is None  # no Teams yet
        await connection.execute("UPDATE works SET mission_id = $1 WHERE id = $2", other_mission, work)
        await connection.execute("INSERT INTO teams (id, organization_id, name) VALUES ($1, $2, 'T')", team, setup.org)
        await connection.execute(
            "INSERT INTO team_resources (team_id, organization_id, resource_type, resource_id)"
            " VALUES ($1, $2, 'work', $3)",
            team,
            setup.org,
            work,
        )
        found = await setup.facets()
        assert [(c.value, c.label, c.count) for c in found.mission or []] == [(str(other_mission), "N", 1)]
        assert [(c.value, c.label, c.count) for c in found.team or []] == [(str(team), "T", 1)]
        assert len(await setup.feed_ids(team=[team])) == 1
        await connection.execute("UPDATE team_resources SET deleted_at = now() WHERE team_id = $1", team)
        assert (await setup.facets()).team == []
        assert await setup.feed_ids(team=[team]) == []
    finally:
        await connection.close()


async def test_concurrent_requests_each_see_what_was_committed_before_they_began(setup: Setup) -> None:
    """Facets requests that wait their turn may share a refresh that began after they arrived; none may
    answer from one that began before."""
    connection = await setup.connect()
    try:
        await setup.types()
        pending: list[tuple[int, asyncio.Task[dict[str, int]]]] = []
        for n in range(1, 31):
            await upsert(connection, setup.org, uuid.uuid4(), "spec")
            pending.append((n, asyncio.create_task(setup.types())))
            await asyncio.sleep(0)
        for committed, task in pending:
            assert (await task)["spec"] >= committed
        assert await setup.types() == {"spec": 30}
    finally:
        await connection.close()


async def test_an_index_dropped_for_space_is_loaded_again(setup: Setup) -> None:
    other = uuid.uuid4()
    owner = await asyncpg.connect(setup.owner_dsn)
    try:
        await owner.execute(
            "INSERT INTO organizations (id, slug, name) VALUES ($1, $2, 'other')", other, f"fi-{other.hex[:12]}"
        )
    finally:
        await owner.close()
    setup.indexes = FacetIndexes(setup.sessions, max_organizations=1)
    connection = await setup.connect()
    try:
        await upsert(connection, setup.org, uuid.uuid4(), "spec")
        assert await setup.types() == {"spec": 1}
        assert setup.org in setup.indexes
        assert await setup.indexes.count(other, lambda index, _: index.documents) == 0
        assert setup.org not in setup.indexes  # dropped: one organization at most
        await upsert(connection, setup.org, uuid.uuid4(), "spec")
        assert await setup.types() == {"spec": 2}
    finally:
        await connection.close()


async def test_the_snapshot_is_taken_by_the_first_query_and_kept(setup: Setup) -> None:
    """Opening the transaction (and binding the organization) takes no snapshot, so a request that opens
    it and then waits for its turn reads what was committed meanwhile; from its first query on, one
    snapshot. The pooled connection goes back as it was (read-write, READ COMMITTED)."""
    count = text("SELECT count(*) FROM kb_documents WHERE organization_id = :org")
    connection = await setup.connect()
    try:
        async with snapshot_transaction(setup.sessions, setup.org) as session:
            await upsert(connection, setup.org, uuid.uuid4(), "spec")  # committed after the binding
            assert await session.scalar(count, {"org": setup.org}) == 1
            await upsert(connection, setup.org, uuid.uuid4(), "spec")
            assert await session.scalar(count, {"org": setup.org}) == 1  # the same snapshot
            assert await session.scalar(text("SHOW transaction_isolation")) == "repeatable read"
            assert await session.scalar(text("SHOW transaction_read_only")) == "on"
    finally:
        await connection.close()
    for _ in range(4):  # every connection the pool may hand out
        async with setup.sessions() as session, session.begin():
            assert await session.scalar(text("SHOW transaction_isolation")) == "read committed"
            assert await session.scalar(text("SHOW transaction_read_only")) == "off"
