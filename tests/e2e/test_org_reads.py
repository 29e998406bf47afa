"""A search's transaction (`org_reads`, through `feed._search_transaction`) on its asyncpg pool, as the
application role under row-level security.

It begins in one round trip with its settings (the organization, generic plans and the first page's walk
settings for an unfiltered search) and commits in one; a walk at the same ef_search sends nothing more.
Whatever ends it — a failed statement, a failure of the caller's, a cancellation, a lost connection — no
connection goes back to the pool inside a transaction, so no organization outlives its transaction.
"""

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from cortex_aggregator import retrieval
from cortex_aggregator.feed import _search_transaction
from cortex_aggregator.filters import DocumentFilter, document_filter
from cortex_contracts.rpc import FeedFilters
from cortex_store.database import CONNECTION_LOST
from cortex_store.org_reads import OrgReads, make_read_pool, org_reads
from tests.backends import terminate_backends
from tests.conftest import Org, OrgFactory
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e

APPLICATION_NAME = "cortex-test-org-reads"
NO_FILTER = DocumentFilter("")
SETTINGS = (
    "SELECT current_setting('cortex.organization_id', true) AS org, current_setting('plan_cache_mode') AS plans,"
    " current_setting('hnsw.ef_search', true) AS ef, current_setting('enable_sort') AS sort"
)
VISIBLE_DOCUMENTS = "SELECT count(*) FROM kb_documents"


@pytest.fixture
async def org(make_org: OrgFactory) -> Org:
    """An organization with one note."""
    org = await make_org()
    created = await org.admin.post("/api/memory/documents", params={"wait": "true"}, json={"title": "Pricing"})
    assert created.status_code == 201, created.text
    return org


@pytest.fixture
async def pool(migrated: Infrastructure) -> AsyncIterator[Any]:
    """One connection, so that every transaction here is on the same one."""
    server_settings = {"application_name": APPLICATION_NAME, "plan_cache_mode": "force_custom_plan"}
    async with make_read_pool(migrated.app_database_url, size=1, server_settings=server_settings) as pool:
        yield pool


async def statements_sent(pool: Any) -> list[str]:
    sent: list[str] = []
    async with pool.acquire() as connection:
        connection.add_query_logger(lambda query: sent.append(query.query))
    return sent


async def test_a_search_transaction_is_one_round_trip_to_begin_and_one_to_commit(org: Org, pool: Any) -> None:
    sent = await statements_sent(pool)
    async with _search_transaction(pool, org.id, NO_FILTER) as reads:
        row = await reads.connection.fetchrow(SETTINGS)
    await asyncio.sleep(0)  # (asyncpg calls its query loggers soon after, not at once)

    assert dict(row) == {"org": str(org.id), "plans": "force_generic_plan", "ef": "150", "sort": "off"}
    assert len(sent) == 3
    assert sent[0].startswith("BEGIN; SET LOCAL cortex.organization_id")
    assert sent[1:] == [SETTINGS, "COMMIT"]


async def test_the_first_pages_walk_needs_no_statement_of_its_own(org: Org, pool: Any) -> None:
    sent = await statements_sent(pool)
    async with _search_transaction(pool, org.id, NO_FILTER) as reads:
        await asyncio.sleep(0)
        sent.clear()
        await reads.walk_with(retrieval.HNSW_EF_SEARCH)
        await asyncio.sleep(0)
        assert sent == []

        await reads.walk_with(retrieval.HNSW_EF_SEARCH_MAX)  # a wider walk
        assert (await reads.connection.fetchrow(SETTINGS))["ef"] == str(retrieval.HNSW_EF_SEARCH_MAX)


async def test_a_filtered_search_plans_custom_and_makes_the_walk_settings_when_it_walks(org: Org, pool: Any) -> None:
    where = document_filter(FeedFilters(type=["spec"]))
    async with _search_transaction(pool, org.id, where) as reads:
        row = await reads.connection.fetchrow(SETTINGS)
        assert (row["plans"], row["sort"]) == ("force_custom_plan", "on")
        await reads.walk_with(retrieval.HNSW_EF_SEARCH)
        row = await reads.connection.fetchrow(SETTINGS)
        assert (row["ef"], row["sort"]) == (str(retrieval.HNSW_EF_SEARCH), "off")


async def unbound(pool: Any) -> bool:
    """The pool's connection is outside any transaction, with no organization bound: it sees no document."""
    async with pool.acquire() as connection:
        return (
            not connection.is_in_transaction()
            and await connection.fetchval("SELECT current_setting('cortex.organization_id', true)") in (None, "")
            and await connection.fetchval(VISIBLE_DOCUMENTS) == 0
        )


async def test_a_failed_statement_or_a_failure_of_the_caller_rolls_back(org: Org, pool: Any) -> None:
    async with org_reads(pool, org.id) as reads:
        assert await reads.fetchval(VISIBLE_DOCUMENTS, {}) > 0  # the organization's own documents

    with pytest.raises(asyncpg.DivisionByZeroError):
        async with org_reads(pool, org.id) as reads:
            await reads.fetch("SELECT 1 / 0", {})
    assert await unbound(pool)

    with pytest.raises(LookupError):
        async with org_reads(pool, org.id) as reads:
            await reads.fetch("SELECT 1", {})
            raise LookupError("the caller's own failure")
    assert await unbound(pool)


async def test_a_cancelled_search_leaves_no_transaction_behind(org: Org, pool: Any) -> None:
    async with pool.acquire() as connection:
        before = await connection.fetchval("SELECT pg_backend_pid()")
    started = asyncio.Event()

    async def slow_search() -> None:
        async with org_reads(pool, org.id) as reads:
            started.set()
            await reads.fetch("SELECT pg_sleep(30)", {})

    task = asyncio.create_task(slow_search())
    await started.wait()
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await unbound(pool)
    async with pool.acquire() as connection:  # cancelled midway: closed, and a fresh one opened
        assert await connection.fetchval("SELECT pg_backend_pid()") != before


async def test_after_the_server_closed_its_connection_the_next_transaction_gets_a_fresh_one(
    org: Org, pool: Any, owner: AsyncEngine
) -> None:
    async def backend_and_documents() -> tuple[int, int]:
        async with org_reads(pool, org.id) as reads:
            return await reads.fetchval("SELECT pg_backend_pid()", {}), await reads.fetchval(VISIBLE_DOCUMENTS, {})

    before, _ = await backend_and_documents()
    assert await terminate_backends(owner, APPLICATION_NAME) >= 1

    try:  # as handlers.py works a request: once more if the connection was lost before asyncpg noticed
        after, documents = await backend_and_documents()
    except CONNECTION_LOST:
        after, documents = await backend_and_documents()
    assert after != before
    assert documents > 0


async def test_a_connection_lost_inside_a_transaction_raises_what_the_loss_raised(
    org: Org, pool: Any, owner: AsyncEngine
) -> None:
    """asyncpg hands a lost connection back to its pool itself, and its proxy refuses every call after. Closing
    it once more raised "cannot call Connection.terminate()" over the statement's own error (QA 46)."""
    with pytest.raises(CONNECTION_LOST) as raised:
        async with org_reads(pool, org.id) as reads:
            await reads.fetchval("SELECT 1", {})
            assert await terminate_backends(owner, APPLICATION_NAME) == 1
            await reads.fetchval(VISIBLE_DOCUMENTS, {})
    assert "terminate()" not in str(raised.value)
    async with org_reads(pool, org.id) as reads:  # and the pool goes on with a fresh connection
        assert await reads.fetchval(VISIBLE_DOCUMENTS, {}) > 0


async def test_reads_see_their_organization_only(org: Org, pool: Any) -> None:
    async with org_reads(pool, uuid.uuid4()) as reads:  # an organization with nothing
        assert await reads.fetchval(VISIBLE_DOCUMENTS, {}) == 0
    async with org_reads(pool, org.id) as reads:
        assert isinstance(reads, OrgReads)
        assert await reads.fetchval(VISIBLE_DOCUMENTS, {}) > 0
