"""An unfiltered search makes its walk settings (`ann_graph.WALK_SETTINGS`) in the statement that binds its
organization, so the first page's walk sends no statement of its own; a wider walk, a filtered search
or the next transaction still sends one."""

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from cortex_aggregator import retrieval
from cortex_aggregator.feed import _search_transaction
from cortex_aggregator.filters import DocumentFilter, document_filter
from cortex_contracts.rpc import FeedFilters
from cortex_store.ann_graph import to_the_graph
from cortex_store.database import make_engine, make_sessionmaker
from tests.conftest import Org
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e

NO_FILTER = DocumentFilter("")
SETTINGS = text("SELECT current_setting('hnsw.ef_search', true), current_setting('enable_sort')")


@pytest.fixture
async def engine(migrated: Infrastructure) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(migrated.app_database_url, pool_size=1)
    yield engine
    await engine.dispose()


@pytest.fixture
def sent(engine: AsyncEngine) -> Iterator[list[str]]:
    statements: list[str] = []

    def record(_connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    yield statements
    event.remove(engine.sync_engine, "before_cursor_execute", record)


async def settings(session: AsyncSession) -> tuple[str, str]:
    ef_search, enable_sort = (await session.execute(SETTINGS)).one()
    return ef_search, enable_sort


async def test_the_first_pages_walk_needs_no_statement_of_its_own(
    org: Org, engine: AsyncEngine, sent: list[str]
) -> None:
    sessions = make_sessionmaker(engine)
    async with _search_transaction(sessions, org.id, NO_FILTER) as session:
        assert await settings(session) == (str(retrieval.HNSW_EF_SEARCH), "off")
        sent.clear()
        await to_the_graph(session, retrieval.HNSW_EF_SEARCH)
        assert sent == []

        await to_the_graph(session, retrieval.HNSW_EF_SEARCH_MAX)  # a wider walk
        assert len(sent) == 1
        assert await settings(session) == (str(retrieval.HNSW_EF_SEARCH_MAX), "off")

    async with sessions() as session, session.begin():  # another transaction: its settings are its own
        sent.clear()
        await to_the_graph(session, retrieval.HNSW_EF_SEARCH)
        assert len(sent) == 1


async def test_a_filtered_search_makes_them_when_it_walks(org: Org, engine: AsyncEngine, sent: list[str]) -> None:
    sessions = make_sessionmaker(engine)
    where = document_filter(FeedFilters(type=["spec"]))
    async with _search_transaction(sessions, org.id, where) as session:
        assert (await settings(session))[1] == "on"
        sent.clear()
        await to_the_graph(session, retrieval.HNSW_EF_SEARCH)
        assert len(sent) == 1
        assert await settings(session) == (str(retrieval.HNSW_EF_SEARCH), "off")
