"""Migration 0017 edits the two indexing functions in place; its downgrade gives 0013's and 0014's back."""

from collections.abc import AsyncIterator

import pytest

from cortex_store.migrate import downgrade_async, upgrade_async
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database, scalar

pytestmark = pytest.mark.e2e

FUNCTIONS = (
    "SELECT string_agg(proname || ':' || (prosrc LIKE '%status <> ''failed''%')::text, ',' ORDER BY proname) "
    "FROM pg_proc WHERE proname IN ('cortex_document_prior', 'cortex_index_document')"
)


@pytest.fixture
async def database(migrated: Infrastructure) -> AsyncIterator[str]:
    async with own_database(migrated.database_url, "cx_failedversions", "0016") as name:
        yield on_database(migrated.database_url, name)


async def failed_versions_retried(database: str) -> str:
    return str(await scalar(database, FUNCTIONS))


async def test_the_functions_are_edited_and_restored(database: str) -> None:
    assert await failed_versions_retried(database) == "cortex_document_prior:false,cortex_index_document:false"
    await upgrade_async(database, "0017")
    assert await failed_versions_retried(database) == "cortex_document_prior:true,cortex_index_document:true"
    await downgrade_async(database, "0016")
    assert await failed_versions_retried(database) == "cortex_document_prior:false,cortex_index_document:false"
