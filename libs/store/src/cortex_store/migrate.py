"""Apply the Alembic migrations shipped in this package."""

import asyncio
import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text

from cortex_store.database import make_engine
from cortex_store.tenancy import APP_ROLE

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
MIGRATION_LOCK_KEY = 0x636F7274  # any copy may start first; they take turns


def _alembic_config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _set_app_password(connection: Connection) -> None:
    """Keep the application role's password in step with CORTEX_APP_DB_PASSWORD on every run."""
    password = os.environ.get("CORTEX_APP_DB_PASSWORD")
    if password and connection.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": APP_ROLE}).first():
        literal = "'" + password.replace("'", "''") + "'"
        connection.exec_driver_sql(f"ALTER ROLE {APP_ROLE} PASSWORD {literal}")


def _upgrade(connection: Connection, revision: str) -> None:
    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
    command.upgrade(_alembic_config(connection), revision)
    _set_app_password(connection)


async def upgrade_async(database_url: str, revision: str = "head") -> None:
    engine = make_engine(database_url, pool_size=1)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(_upgrade, revision)
    finally:
        await engine.dispose()


async def downgrade_async(database_url: str, revision: str) -> None:
    engine = make_engine(database_url, pool_size=1)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(lambda sync: command.downgrade(_alembic_config(sync), revision))
    finally:
        await engine.dispose()


def upgrade(database_url: str, revision: str = "head") -> None:
    asyncio.run(upgrade_async(database_url, revision))
