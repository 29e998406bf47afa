"""Migrations 0017 and 0024 edit the two indexing functions in place; each downgrade gives the functions
as they were back."""

from collections.abc import AsyncIterator

import pytest

from cortex_store.migrate import downgrade_async, upgrade_async
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database, scalar

pytestmark = pytest.mark.e2e

# Each revision, the one before it, and a text only its edit puts in both functions.
EDITS = {
    "0017": ("0016", "status <> ''failed''"),  # a failed version is retried
    "0024": ("0023", "stored.deleted_at IS NOT NULL"),  # a deleted version is stale, whatever its status
}


def edited(text: str) -> str:
    return (
        f"SELECT string_agg(proname || ':' || (prosrc LIKE '%{text}%')::text, ',' ORDER BY proname) "
        "FROM pg_proc WHERE proname IN ('cortex_document_prior', 'cortex_index_document')"
    )


@pytest.fixture(params=sorted(EDITS))
async def revision(request: pytest.FixtureRequest, migrated: Infrastructure) -> AsyncIterator[tuple[str, str]]:
    """The revision under test, and a database migrated to the one before it."""
    before, _ = EDITS[request.param]
    async with own_database(migrated.database_url, f"cx_functions_{request.param}", before) as name:
        yield request.param, on_database(migrated.database_url, name)


async def test_the_functions_are_edited_and_restored(revision: tuple[str, str]) -> None:
    name, database = revision
    before, text = EDITS[name]
    neither, both = (
        "cortex_document_prior:false,cortex_index_document:false",
        "cortex_document_prior:true,cortex_index_document:true",
    )
    assert await scalar(database, edited(text)) == neither
    await upgrade_async(database, name)
    assert await scalar(database, edited(text)) == both
    await downgrade_async(database, before)
    assert await scalar(database, edited(text)) == neither
