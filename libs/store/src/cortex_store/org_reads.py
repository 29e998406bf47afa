"""Reads bound to one organization, on a bare asyncpg connection: the search path's transaction.

Through SQLAlchemy a search's transaction cost ~1 ms of the aggregator's CPU before its first query (a
pool checkout, a session, BEGIN, the statement binding the organization, COMMIT); on an asyncpg pool
~0.3 ms, with BEGIN and the settings sent as one simple query (measured side by side, client CPU per
transaction of one query). The settings are transaction-local, as `tenancy.org_transaction` makes them,
and a connection goes back to its pool only outside a transaction: the transaction is committed, or
rolled back, or the connection is closed — and the pool's reset rolls back whatever is still open.
"""

import contextlib
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import asyncpg

from cortex_store.ann_graph import walk_settings
from cortex_store.database import CONNECTION_LOST, asyncpg_dsn, connector
from cortex_store.records import fetch_on, positional
from cortex_store.tenancy import ORG_SETTING


def _close(connection: Any) -> None:
    """Close the pool's connection, unless asyncpg has: a lost one it hands back to its pool itself, and its
    proxy then refuses every call ("released back to the pool"), which would hide why it was lost."""
    with contextlib.suppress(asyncpg.InterfaceError):
        connection.terminate()


async def _abandon(connection: Any, exc: BaseException) -> None:
    """Roll the transaction back; close a connection that cannot be trusted to (lost, or cancelled midway:
    asyncpg may still be ending the cancelled statement), so that the pool opens a fresh one."""
    if isinstance(exc, Exception) and not isinstance(exc, CONNECTION_LOST):
        try:
            await connection.execute("ROLLBACK")
        except Exception:  # noqa: BLE001 - any failure here means: do not pool it again
            _close(connection)
    else:
        _close(connection)


async def _end_open_transaction(connection: Any) -> None:
    """The pool's reset: a connection never carries a transaction, nor its organization, to its next user."""
    if connection.is_in_transaction():
        await connection.execute("ROLLBACK")


def make_read_pool(database_url: str, *, size: int, server_settings: Mapping[str, str]) -> Any:
    """A pool for `org_reads`; it connects on first use."""
    return asyncpg.create_pool(
        asyncpg_dsn(database_url),
        min_size=0,
        max_size=size,
        reset=_end_open_transaction,
        server_settings=dict(server_settings),
        connect=connector(database_url),
    )


@dataclass
class OrgReads:
    """Statements in one transaction bound to an organization."""

    connection: Any  # asyncpg's
    walk_ef: int | None  # the hnsw.ef_search the transaction's walks take; None: walk settings not made

    async def fetch(self, sql: str, params: Mapping[str, Any]) -> list[SimpleNamespace]:
        """Rows of `sql`, written with `:name` parameters, each with its columns as attributes."""
        return await fetch_on(self.connection, sql, params)

    async def fetchval(self, sql: str, params: Mapping[str, Any]) -> Any:
        statement, names = positional(sql)
        return await self.connection.fetchval(statement, *(params[name] for name in names))

    async def walk_with(self, ef_search: int) -> None:
        """Walk the HNSW graph (`ann_graph.walk_settings`) for the rest of the transaction."""
        if self.walk_ef != ef_search:
            await self.connection.execute(walk_settings(ef_search))
            self.walk_ef = ef_search


@asynccontextmanager
async def org_reads(
    pool: Any, organization_id: uuid.UUID, *, generic_plans: bool = False, walk_ef: int | None = None
) -> AsyncIterator[OrgReads]:
    """A transaction that sees only `organization_id`'s rows, begun in one round trip with its settings.

    `generic_plans`: its prepared statements reuse generic plans (the pool's default may force custom
    ones); `walk_ef`: it walks the graph with that ef_search from the start."""
    settings = [f"SET LOCAL {ORG_SETTING} = '{uuid.UUID(str(organization_id))}'"]  # a UUID: nothing to escape
    if generic_plans:
        settings.append("SET LOCAL plan_cache_mode = force_generic_plan")
    if walk_ef is not None:
        settings.append(walk_settings(walk_ef))
    async with pool.acquire() as connection:
        await connection.execute("; ".join(["BEGIN", *settings]))
        try:
            yield OrgReads(connection, walk_ef)
        except BaseException as exc:
            await _abandon(connection, exc)
            raise
        await connection.execute("COMMIT")
