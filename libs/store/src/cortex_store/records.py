"""Statements written with SQLAlchemy's `:name` parameters, run straight on an asyncpg connection (or a
session's): for the hottest reads of a search, without SQLAlchemy's per-statement and per-row work."""

import functools
import re
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from cortex_store.database import driver_connection

_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")  # `:org`, not the `::` of a cast


@functools.lru_cache(maxsize=256)
def positional(sql: str) -> tuple[str, tuple[str, ...]]:
    """The statement with asyncpg's `$1, $2…` for its `:name` parameters, and the names in that order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _NAMED.sub(number, sql), tuple(names)


async def fetch_on(connection: Any, sql: str, params: Mapping[str, Any]) -> list[SimpleNamespace]:
    """Rows of `sql` on an asyncpg connection, each with its columns as attributes."""
    statement, names = positional(sql)
    records = await connection.fetch(statement, *(params[name] for name in names))
    return [SimpleNamespace(**dict(record.items())) for record in records]


async def fetch(session: AsyncSession, sql: str, params: Mapping[str, Any]) -> list[SimpleNamespace]:
    """Rows of `sql` in the session's transaction, each with its columns as attributes."""
    return await fetch_on(await driver_connection(session), sql, params)
