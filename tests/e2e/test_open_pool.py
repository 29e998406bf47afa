"""`open_pool` on real PostgreSQL: the pool's connections are open before the first load, and a database
that does not answer leaves a warning, not a failed start."""

import logging

import pytest

from cortex_store.database import make_engine, open_pool
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


async def test_the_pool_holds_its_connections_open_after_start_up(migrated: Infrastructure) -> None:
    engine = make_engine(migrated.app_database_url, pool_size=3, max_overflow=0, pre_ping=False)
    try:
        await open_pool(engine, 3)
        assert engine.pool.checkedin() == 3  # type: ignore[attr-defined]
        async with engine.connect() as connection:  # one of them, not a new one
            assert engine.pool.checkedin() == 2  # type: ignore[attr-defined]
            assert connection.closed is False
    finally:
        await engine.dispose()


async def test_a_database_that_does_not_answer_is_logged_and_start_up_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = make_engine("postgresql://nobody@127.0.0.1:9/none", pool_size=2, max_overflow=0, pre_ping=False)
    try:
        with caplog.at_level(logging.WARNING):
            await open_pool(engine, 2)
        assert "opened 0 of 2 database connections" in caplog.text
    finally:
        await engine.dispose()
