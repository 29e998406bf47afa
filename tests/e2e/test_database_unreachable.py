"""`unreachable`: which failures say PostgreSQL cannot be reached now (the indexer then holds its events until
it answers) and which say a statement is wrong (retried, then dead-lettered), on a real server."""

import socket

import asyncpg
import pytest
from sqlalchemy import text

from cortex_store.database import make_engine, unreachable
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


async def _failure(database_url: str, sql: str) -> BaseException:
    engine = make_engine(database_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            await connection.execute(text(sql))
    except Exception as exc:  # noqa: BLE001 - the failure is what is looked at
        return exc
    finally:
        await engine.dispose()
    raise AssertionError("no failure")


async def test_a_server_that_refuses_connections_is_unreachable() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        nowhere = f"postgresql://cortex_app@127.0.0.1:{probe.getsockname()[1]}/cortex"
    assert unreachable(await _failure(nowhere, "SELECT 1"))


async def test_a_wrong_statement_is_not(migrated: Infrastructure) -> None:
    assert not unreachable(await _failure(migrated.database_url, "SELECT FROM no_such_table"))
    assert not unreachable(ValueError("a bug"))
    # asyncpg's DataError is an InterfaceError, as a closed connection's is: a bad value would wait for ever.
    assert not unreachable(asyncpg.exceptions._base.DataError("invalid input for query argument $1"))
    assert unreachable(asyncpg.InterfaceError("cannot perform operation: connection is closed"))
