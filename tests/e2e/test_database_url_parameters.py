"""A DATABASE_URL with libpq's parameters (`?sslmode=require`, as deploy/k8s's Secret template has it) works
for every connection the services open: the SQLAlchemy engines (migrations, sessions) and the bare asyncpg
pools alike. Before, the engines passed `sslmode` to asyncpg.connect as a keyword: a TypeError at start.

`connect_timeout` bounds how long a new connection may take, as in libpq: asyncpg does not know it, and sent
it to the server as a setting, which refused every connection ("unrecognized configuration parameter")."""

import socket
import time

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from cortex_store.database import (
    DatabaseTimeout,
    asyncpg_dsn,
    make_engine,
    unreachable,
)
from cortex_store.migrate import upgrade_async
from cortex_store.org_reads import make_read_pool
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


def with_parameters(url: str, **parameters: str) -> str:
    return make_url(url).update_query_dict(parameters).render_as_string(hide_password=False)


# The test server listens on a Unix socket, where TLS does not apply (as in libpq): `require` connects too.
@pytest.mark.parametrize("mode", ["disable", "allow", "prefer", "require"])
async def test_an_sslmode_the_server_can_meet_connects_everywhere(migrated: Infrastructure, mode: str) -> None:
    url = with_parameters(migrated.database_url, sslmode=mode, connect_timeout="5")
    await upgrade_async(url)  # at head already: connects, finds nothing to do
    engine = make_engine(url, pool_size=1)
    try:
        async with engine.connect() as connection:
            assert await connection.scalar(text("SELECT 1")) == 1
    finally:
        await engine.dispose()
    connection = await asyncpg.connect(asyncpg_dsn(url))
    try:
        assert await connection.fetchval("SELECT 1") == 1
    finally:
        await connection.close()


async def test_connect_timeout_bounds_a_connection_to_a_server_that_does_not_answer() -> None:
    with socket.socket() as frozen:  # accepts connections (the kernel does) and never answers
        frozen.bind(("127.0.0.1", 0))
        frozen.listen()
        url = f"postgresql://cortex_app@127.0.0.1:{frozen.getsockname()[1]}/cortex?connect_timeout=0.5"
        engine = make_engine(url, pool_size=1)
        pool = make_read_pool(url, size=1, server_settings={})
        try:
            started = time.monotonic()
            with pytest.raises(DatabaseTimeout, match=r"did not answer within 0\.5 s") as raised:
                async with engine.connect():
                    pass
            await pool  # min_size 0: connects on first use
            with pytest.raises(DatabaseTimeout):
                async with pool.acquire():
                    pass
            assert time.monotonic() - started < 5
        finally:
            await engine.dispose()
            await pool.close()
    assert unreachable(raised.value)  # the indexer holds its events until the database answers
