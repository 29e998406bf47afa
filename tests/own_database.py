"""A database of a test's own on the session's PostgreSQL server, dropped afterwards."""

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url

from cortex_store.database import make_engine
from cortex_store.migrate import upgrade_async


def on_database(url: str, name: str) -> str:
    """`url` (any role) pointed at database `name`."""
    return make_url(url).set(database=name).render_as_string(hide_password=False)


@asynccontextmanager
async def own_database(owner_url: str, prefix: str, revision: str = "head") -> AsyncIterator[str]:
    """A new database migrated to `revision`; yields its name."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = make_engine(owner_url, pool_size=1)
    async with admin.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        await upgrade_async(on_database(owner_url, name), revision)
        yield name
    finally:
        async with admin.connect() as connection:
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()


async def scalar(database_url: str, sql: str) -> Any:
    """The first column of the first row of `sql` on that database."""
    engine = make_engine(database_url, pool_size=1)
    try:
        async with engine.connect() as connection:
            return await connection.scalar(text(sql))
    finally:
        await engine.dispose()
