"""`autocommit_connection` on real PostgreSQL: each statement commits by itself, and a connection the
server has closed is discarded rather than handed out again (the indexer's pool has no pre-ping)."""

import asyncpg
import pytest

from cortex_store.database import asyncpg_dsn, autocommit_connection, make_engine, make_sessionmaker
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


async def test_statements_commit_by_themselves_and_a_closed_connection_is_not_pooled_again(
    migrated: Infrastructure,
) -> None:
    engine = make_engine(migrated.app_database_url, pool_size=1, max_overflow=0, pre_ping=False)
    sessions = make_sessionmaker(engine)
    try:
        async with autocommit_connection(sessions) as connection:
            assert not connection.is_in_transaction()
            first = await connection.fetchval("SELECT pg_backend_pid()")

        # The server ends that connection's process (a restart, an idle timeout, an administrator).
        owner = await asyncpg.connect(asyncpg_dsn(migrated.database_url))
        try:
            assert await owner.fetchval("SELECT pg_terminate_backend($1)", first)
        finally:
            await owner.close()

        # asyncpg reports it as the connection gone, or (when it learns of it only as the statement starts)
        # as a protocol error.
        lost = (asyncpg.PostgresConnectionError, asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError)
        with pytest.raises(lost):
            async with autocommit_connection(sessions) as connection:
                await connection.fetchval("SELECT 1")

        async with autocommit_connection(sessions) as connection:  # the pool's only slot: a fresh connection
            assert await connection.fetchval("SELECT pg_backend_pid()") != first
    finally:
        await engine.dispose()
