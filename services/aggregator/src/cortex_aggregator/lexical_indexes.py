"""The aggregator's in-memory BM25 indexes (`lexical_index`), one per organization, current on every search.

An organization's index is loaded in the background on its first search (one statement: every live
document with its postings, grouped per document); until it is loaded, that search and the next ones
rank in SQL as before. Once loaded, every search first brings it up to date by one statement, as the
facet index does (`facet_indexes`): the documents whose `changed_xid` is at least the
`pg_snapshot_xmin` recorded with the previous read, with their postings, read in one snapshot. Postings
are only ever written in a transaction that also writes the document's tracked columns (the indexer's
upsert and tombstone), so a changed document is always read with its new postings; the same statement
analyses the query into lexemes. Refreshes of one organization take turns (an asyncio lock), so a later
state is never overwritten by an earlier one. When more than `reload_above` (2,000) changed at once
(a bulk import), the index is loaded afresh in the background instead, and SQL ranks meanwhile.

At most `max_organizations` indexes are kept, and together at most `max_bytes` (1 GiB by default,
checked after each load and each refresh that changed one), least recently used dropped: ~8 bytes per
posting and ~40 per document in arrays, plus a dict of document ids (measured at 100k one-passage
documents: 3.45M postings, 32 MB of arrays, loaded in 8-14 s: bench/lexical_load). Loading is logged
with its size and time.
"""

import asyncio
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_aggregator.lexical_index import DocumentPostings, LexicalIndex, Ranked
from cortex_aggregator.lru import entry_of
from cortex_store.database import driver_connection
from cortex_store.tenancy import org_transaction
from cortex_telemetry.heap import collector_held

log = logging.getLogger(__name__)

T = TypeVar("T")

THREAD_ABOVE_DOCUMENTS = 500  # larger refreshes are applied off the event loop (holding the turn)
RELOAD_ABOVE_DOCUMENTS = 2000  # more changed at once (a bulk import): load afresh, in SQL meanwhile
DEFAULT_MAX_BYTES = 1 << 30
FREE_ROWS = 1000  # a loaded index's rows are freed this many at a time

_SNAPSHOT = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin"

LOAD_SQL = f"""
WITH s AS ({_SNAPSHOT}), per_word AS (
    SELECT document_id, lexeme, sum(tf)::int4 AS tf, max(document_tokens) AS length
    FROM kb_postings WHERE organization_id = $1 GROUP BY document_id, lexeme
), per_document AS (
    SELECT document_id, array_agg(lexeme) AS lexemes, array_agg(tf) AS tfs, max(length) AS length
    FROM per_word GROUP BY document_id
)
SELECT s.xmin, d.id, true AS live, d.token_count, p.lexemes, p.tfs, p.length
FROM s
LEFT JOIN kb_documents d ON d.organization_id = $1 AND d.deleted_at IS NULL
LEFT JOIN per_document p ON p.document_id = d.id
"""

# What changed since the last read's xmin ($2), deletions included, and the query ($3) as lexemes.
REFRESH_SQL = f"""
WITH s AS (
    SELECT q.xmin, words.query_lexemes, words.query_counts
    FROM ({_SNAPSHOT}) q, (
        SELECT array_agg(u.lexeme) AS query_lexemes,
               array_agg(coalesce(array_length(u.positions, 1), 1)) AS query_counts
        FROM unnest(to_tsvector('english', $3)) u
    ) words
)
SELECT s.*, d.id, d.deleted_at IS NULL AS live, d.token_count, p.lexemes, p.tfs, p.length
FROM s
LEFT JOIN (
    SELECT * FROM kb_documents WHERE organization_id = $1 AND changed_xid >= $2::text::xid8
    ORDER BY changed_xid LIMIT $4  -- (the order keeps even a generic plan on the index: searches allow them)
) d ON true
LEFT JOIN LATERAL (
    SELECT array_agg(lexeme) AS lexemes, array_agg(tf) AS tfs, max(length) AS length FROM (
        SELECT p.lexeme, sum(p.tf)::int4 AS tf, max(p.document_tokens) AS length
        FROM kb_chunks c JOIN kb_postings p ON p.chunk_id = c.id
        WHERE c.document_id = d.id AND c.organization_id = $1 AND p.organization_id = $1
        GROUP BY p.lexeme
    ) per_word
) p ON d.deleted_at IS NULL
"""


def _documents(rows: Sequence[Any]) -> list[DocumentPostings]:
    return [
        DocumentPostings(
            row["id"], row["live"], row["token_count"], row["lexemes"] or (), row["tfs"] or (), row["length"] or 0
        )
        for row in rows
        if row["id"] is not None
    ]


def _built(rows: list[Any]) -> LexicalIndex:
    """The index of a load's rows, which it then empties a slice at a time (in a worker thread).

    Freed at once, on the event loop, the rows of 100k documents (a record each, its arrays, their words:
    millions of objects) were one deallocation holding the GIL: bench/lexical_load's longest stall of the
    loop went 125 and 142 ms -> 73 and 46. A slice is ~1-2 ms; between slices the GIL passes as usual."""
    index = LexicalIndex.built(_documents(rows))
    while rows:
        del rows[-FREE_ROWS:]
    return index


class _Entry:
    def __init__(self) -> None:
        self.index: LexicalIndex | None = None
        self.xmin = 0
        self.turn = asyncio.Lock()
        self.loading: asyncio.Task[None] | None = None


class LexicalIndexes:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        max_organizations: int = 16,
        reload_above: int = RELOAD_ABOVE_DOCUMENTS,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self._sessions = sessions
        self._max = max_organizations
        self._reload_above = reload_above
        self._max_bytes = max_bytes
        self._entries: OrderedDict[uuid.UUID, _Entry] = OrderedDict()

    def held_bytes(self) -> int:
        return sum(entry.index.nbytes() for entry in self._entries.values() if entry.index is not None)

    def _within_budget(self, keep: uuid.UUID) -> None:
        """Drop the least recently used indexes until those held fit `max_bytes` (`keep`'s is never
        dropped: one organization bigger than the budget is still served from memory, alone)."""
        held = self.held_bytes()
        for organization_id in list(self._entries):
            if held <= self._max_bytes:
                return
            index = self._entries[organization_id].index
            if organization_id != keep and index is not None:
                held -= index.nbytes()
                del self._entries[organization_id]
                log.info(
                    "lexical index of %s dropped: the indexes held exceed %d MB",
                    organization_id,
                    self._max_bytes // 10**6,
                )

    def _entry(self, organization_id: uuid.UUID) -> _Entry:
        return entry_of(self._entries, organization_id, _Entry, self._max)

    async def wait_loaded(self, organization_id: uuid.UUID) -> None:
        """Start loading the organization's index if need be and wait for it (tests, warm-up)."""
        entry = self._entry(organization_id)
        if entry.index is None:
            await self._start_loading(organization_id, entry)

    def _start_loading(self, organization_id: uuid.UUID, entry: _Entry) -> asyncio.Task[None]:
        if entry.loading is None or entry.loading.done():
            entry.loading = asyncio.create_task(self._load(organization_id, entry))
        return entry.loading

    async def rank(
        self, connection: Any, organization_id: uuid.UUID, q: str, n: int, k1: float, b: float
    ) -> Ranked | None:
        """The lexical leg from memory, the index first brought to the present (on `connection`, asyncpg's,
        in a transaction bound to the organization); None while it loads."""
        return await self._current(connection, organization_id, q, lambda index, query: index.rank(query, n, k1, b))

    async def matching(
        self, organization_id: uuid.UUID, q: str
    ) -> tuple[NDArray[np.uint64], NDArray[np.uint64]] | None:
        """The ids (halves) of the documents with at least one of `q`'s words, from the index brought to the
        present in a transaction of its own; None while the index loads."""
        entry = self._entry(organization_id)
        if entry.index is None:
            self._start_loading(organization_id, entry)
            return None
        async with org_transaction(self._sessions, organization_id) as session:
            connection = await driver_connection(session)
            return await self._current(
                connection, organization_id, q, lambda index, query: index.matching(word for word, _ in query)
            )

    async def _current(
        self,
        connection: Any,
        organization_id: uuid.UUID,
        q: str,
        use: Callable[[LexicalIndex, list[tuple[str, int]]], T],
    ) -> T | None:
        """`use` the index, brought to the present, with `q` as (lexeme, count) pairs, in the organization's
        turn (another request may be applying changes in a thread meanwhile); None while the index loads."""
        entry = self._entry(organization_id)
        if entry.index is None:
            self._start_loading(organization_id, entry)
            return None
        async with entry.turn:
            limit = self._reload_above + 1
            rows = await connection.fetch(REFRESH_SQL, organization_id, str(entry.xmin), q, limit)
            index, changed = entry.index, _documents(rows)
            if index is None:  # dropped meanwhile (a failed apply)
                return None
            if len(changed) > self._reload_above:
                entry.index = None
                self._start_loading(organization_id, entry)
                return None
            try:
                if len(changed) > THREAD_ABOVE_DOCUMENTS:
                    await asyncio.to_thread(index.apply, changed)
                else:
                    index.apply(changed)
            except BaseException:
                entry.index = None  # half-applied: load again
                raise
            entry.xmin = int(rows[0]["xmin"])
            if changed:
                self._within_budget(keep=organization_id)
            first = rows[0]
            query = list(zip(first["query_lexemes"] or (), first["query_counts"] or (), strict=True))
            return use(index, query)

    async def _load(self, organization_id: uuid.UUID, entry: _Entry) -> None:
        started = time.perf_counter()
        try:
            with collector_held():
                async with org_transaction(self._sessions, organization_id) as session:
                    rows = await (await driver_connection(session)).fetch(LOAD_SQL, organization_id)
                xmin = int(rows[0]["xmin"])
                index = await asyncio.to_thread(_built, rows)  # (empties `rows`, freed as the collector is held)
        except Exception:
            log.exception("loading the lexical index of %s failed; searches rank in SQL meanwhile", organization_id)
            return
        async with entry.turn:
            entry.index, entry.xmin = index, xmin
        self._within_budget(keep=organization_id)
        log.info(
            "lexical index of %s loaded: %d documents, %d postings, %.1f MB in %.2f s",
            organization_id,
            index.live_documents,
            index.postings,
            index.nbytes() / 1e6,
            time.perf_counter() - started,
        )
