"""A DATABASE_URL with libpq's parameters (`?sslmode=require`, as deploy/k8s's Secret template has it) works
for every connection the services open: the SQLAlchemy engines (migrations, sessions) and the bare asyncpg
pools alike. Before, the engines passed `sslmode` to asyncpg.connect as a keyword: a TypeError at start."""

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from cortex_store.database import asyncpg_dsn, make_engine
from cortex_store.migrate import upgrade_async
from tests.infrastructure import Infrastructure

pytestmark = pytest.mark.e2e


def with_parameters(url: str, **parameters: str) -> str:
    return make_url(url).update_query_dict(parameters).render_as_string(hide_password=False)


# The test server listens on a Unix socket, where TLS does not apply (as in libpq): `require` connects too.
@pytest.mark.parametrize("mode", ["disable", "allow", "prefer", "require"])
async def test_an_sslmode_the_server_can_meet_connects_everywhere(migrated: Infrastructure, mode: str) -> None:
    url = with_parameters(migrated.database_url, sslmode=mode)
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
