"""The aggregator's in-memory facet indexes, one per organization, current on every request.

An organization's index is loaded on its first request (every live document and the catalog), then
brought up to date at the start of every request by one statement: the rows of `kb_documents` whose
`changed_xid` (migration 0012: the id of the transaction that last changed what the index holds) is at
least the `pg_snapshot_xmin` recorded with the previous read, and whether any catalog row changed so
(then the catalog is read again, whole). Every transaction below that xmin had ended before the
previous read's snapshot, so the previous read saw its rows; every one at or above it is read again —
one that got its id before another but commits after it is not missed. Rows read twice are simply
stored again. So a request sees every write committed before it started, as a query would.

Reads of one organization's index take turns (an asyncio lock), and each starts its snapshot while it
holds the turn, so a later state is never overwritten by an earlier one. A facets request that waited
while another request's refresh began after it arrived uses that refresh instead of making its own.
The feed keeps its transaction (REPEATABLE READ: one snapshot) to fetch the page's rows, so they are the
rows the index chose from.

At most `max_organizations` indexes are kept, least recently used dropped: ~20 MB per 100k documents
(measured: columns with room to grow, tag pairs, the id -> slot dict of ints, which the garbage
collector skips). Loading one reads every live document; it is logged with its size and time.
"""

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_aggregator.facet_catalog import CATALOG_SQL, catalog_from_rows
from cortex_aggregator.facet_index import OrgIndex
from cortex_aggregator.lru import entry_of
from cortex_store.database import driver_connection
from cortex_store.tenancy import ONE_SNAPSHOT, ORG_SETTING

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

THREAD_ABOVE_ROWS = 2000  # larger batches (a first load) are stored off the event loop

_CATALOG_TABLES = ("works", "missions", "teams", "team_resources")
_DOCUMENT_COLUMNS = """d.id, d.doc_class, d.work_id, d.source, d.status, d.tags,
       (extract(epoch FROM d.updated_at) * 1000000)::int8 AS updated_us, d.deleted_at IS NOT NULL AS deleted"""

# The first read: every live document, the snapshot's xmin on every row (one row with no document when
# the organization has none).
LOAD_SQL = f"""
SELECT s.xmin, true AS catalog_changed, {_DOCUMENT_COLUMNS}
FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin) s
LEFT JOIN kb_documents d ON d.organization_id = $1 AND d.deleted_at IS NULL
"""

# Every later read: what changed since the last one's xmin ($2), deletions included.
_CATALOG_CHANGED = " OR ".join(
    f"EXISTS (SELECT 1 FROM {table} WHERE organization_id = $1 AND changed_xid >= $2::text::xid8)"
    for table in _CATALOG_TABLES
)
REFRESH_SQL = f"""
SELECT s.xmin, s.catalog_changed, {_DOCUMENT_COLUMNS}
FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin, {_CATALOG_CHANGED} AS catalog_changed) s
LEFT JOIN kb_documents d ON d.organization_id = $1 AND d.changed_xid >= $2::text::xid8
"""

# The documents with at least one of a search text's words, as the lexical leg reads them (retrieval.py).
MATCHING_SQL = """
SELECT DISTINCT p.document_id FROM kb_postings p
WHERE p.organization_id = $1 AND p.lexeme = ANY(ARRAY(SELECT u.lexeme FROM unnest(to_tsvector('english', $2)) u))
"""


@asynccontextmanager
async def snapshot_transaction(
    sessions: async_sessionmaker[AsyncSession], organization_id: uuid.UUID
) -> AsyncIterator[AsyncSession]:
    """A read-only transaction with one snapshot for all its statements, bound to one organization.

    The binding is a `SET LOCAL`, which (unlike `SELECT set_config(...)`) takes no snapshot: the
    snapshot is taken by the first query, so a caller can open the transaction, then wait for its
    turn, and still read as of the moment its turn came."""
    async with sessions() as session, session.begin():
        await session.connection(execution_options=ONE_SNAPSHOT)
        await session.execute(text(f"SET LOCAL {ORG_SETTING} = '{uuid.UUID(str(organization_id))}'"))
        yield session


class _Entry:
    def __init__(self) -> None:
        self.index: OrgIndex | None = None
        self.xmin = 0
        self.turn = asyncio.Lock()
        self.started = 0  # refreshes begun, each numbered under the turn before its snapshot is taken
        self.finished = 0  # the number of the last refresh that completed

    def start(self) -> int:
        self.started += 1
        return self.started


class FacetIndexes:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], max_organizations: int = 16) -> None:
        self._sessions = sessions
        self._max = max_organizations
        self._entries: OrderedDict[uuid.UUID, _Entry] = OrderedDict()

    def __contains__(self, organization_id: uuid.UUID) -> bool:
        """Whether this organization's index is held (loaded or being loaded)."""
        return organization_id in self._entries

    def _entry(self, organization_id: uuid.UUID) -> _Entry:
        return entry_of(self._entries, organization_id, _Entry, self._max)

    async def count(
        self,
        organization_id: uuid.UUID,
        compute: Callable[[OrgIndex, list[uuid.UUID] | None], T],
        *,
        matching: str | None = None,
    ) -> T:
        """`compute` over the organization's index as of a snapshot taken after this call began; with
        `matching` (a search text), also given the documents that contain at least one of its words."""
        entry = self._entry(organization_id)
        arrived = entry.started
        async with snapshot_transaction(self._sessions, organization_id) as session, entry.turn:
            if entry.index is None or entry.finished <= arrived:  # else a refresh that began after we arrived did
                await self._refreshed(entry, entry.start(), organization_id, session)
            assert entry.index is not None
            ids = None
            if matching is not None:
                rows = await (await driver_connection(session)).fetch(MATCHING_SQL, organization_id, matching)
                ids = [row["document_id"] for row in rows]
            return compute(entry.index, ids)

    async def read(
        self,
        organization_id: uuid.UUID,
        compute: Callable[[OrgIndex], T],
        fetch: Callable[[AsyncSession, T], Awaitable[R]],
    ) -> tuple[T, R]:
        """`compute` over the index as of a fresh snapshot, then `fetch` in that same snapshot (after the
        turn is passed on: the next request need not wait for it)."""
        entry = self._entry(organization_id)
        async with snapshot_transaction(self._sessions, organization_id) as session:
            async with entry.turn:
                number = entry.start()
                computed = compute(await self._refreshed(entry, number, organization_id, session))
            return computed, await fetch(session, computed)

    async def _refreshed(
        self, entry: _Entry, number: int, organization_id: uuid.UUID, session: AsyncSession
    ) -> OrgIndex:
        """Bring the index to this session's snapshot (loading it first if need be). Holds the turn."""
        connection = await driver_connection(session)
        index, started = entry.index, time.perf_counter()
        if index is None:
            rows = await connection.fetch(LOAD_SQL, organization_id)
        else:
            rows = await connection.fetch(REFRESH_SQL, organization_id, str(entry.xmin))
        catalog = await connection.fetch(CATALOG_SQL, organization_id) if rows[0]["catalog_changed"] else None
        try:
            index = index or OrgIndex()
            changed = [row for row in rows if row["id"] is not None]
            if len(changed) > THREAD_ABOVE_ROWS:  # (only this request, holding the turn, uses the index)
                await asyncio.to_thread(index.apply, changed)
            else:
                index.apply(changed)
            if catalog is not None:
                index.catalog = catalog_from_rows(catalog)
        except BaseException:
            entry.index = None  # half-applied: start again from a full load
            raise
        if entry.index is None:
            log.info(
                "facet index of %s loaded: %d documents in %.2f s",
                organization_id,
                index.documents,
                time.perf_counter() - started,
            )
        entry.index, entry.xmin, entry.finished = index, int(rows[0]["xmin"]), number
        return index
