"""Migration 0018 edits `cortex_caller_access` in place; its downgrade gives 0011's back."""

from collections.abc import AsyncIterator

import pytest

from cortex_store.migrate import downgrade_async, upgrade_async
from tests.infrastructure import Infrastructure
from tests.own_database import on_database, own_database, scalar

pytestmark = pytest.mark.e2e

NAMES_OUTSIDERS = "SELECT prosrc LIKE '%NULL::member_role%' FROM pg_proc WHERE proname = 'cortex_caller_access'"


@pytest.fixture
async def database(migrated: Infrastructure) -> AsyncIterator[str]:
    async with own_database(migrated.database_url, "cx_calleraccess", "0017") as name:
        yield on_database(migrated.database_url, name)


async def names_outsiders(database: str) -> bool:
    return bool(await scalar(database, NAMES_OUTSIDERS))


async def test_the_function_is_edited_and_restored(database: str) -> None:
    assert not await names_outsiders(database)
    await upgrade_async(database, "0018")
    assert await names_outsiders(database)
    await downgrade_async(database, "0017")
    assert not await names_outsiders(database)
