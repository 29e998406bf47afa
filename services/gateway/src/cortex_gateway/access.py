"""What a caller may do in an organization, in one statement: `cortex_caller_access` (migration 0011).

The function resolves the slug, binds that organization for row-level security and reads the live
membership (or unrevoked API key), all inside PostgreSQL. Nothing is cached: a revoked member or key
is refused on the very next request.

It runs on the gateway's own small pool of autocommit connections, so a lookup is one round trip: no
BEGIN/COMMIT around it, and no pre-ping when a connection is taken from the pool. A pooled connection
the server has closed since (a restart, an idle timeout) fails the statement instead; SQLAlchemy then
discards the pool's stale connections, and the read-only lookup is tried once more on a fresh one.
"""

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from cortex_store.database import async_url
from cortex_store.models import MemberRole

APPLICATION_NAME = "cortex-gateway-access"  # how its connections show in pg_stat_activity
CALLER_ACCESS = text(
    "SELECT organization_id, tenant_id, role, api_key_id FROM cortex_caller_access(:slug, :user_id, :key_hash)"
)


@dataclass(frozen=True)
class Access:
    organization_id: uuid.UUID
    tenant_id: str | None
    role: MemberRole
    api_key_id: uuid.UUID | None  # set when the caller is an API key


def make_access_engine(database_url: str, *, pool_size: int) -> AsyncEngine:
    return create_async_engine(
        async_url(database_url),
        isolation_level="AUTOCOMMIT",
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=False,
        connect_args={"server_settings": {"application_name": APPLICATION_NAME}},
    )


async def _lookup(engine: AsyncEngine, parameters: dict[str, str | None]) -> Row[Any] | None:
    async with engine.connect() as connection:
        return (await connection.execute(CALLER_ACCESS, parameters)).first()


async def caller_access(
    engine: AsyncEngine, slug: str, *, user_id: str | None = None, key_hash: str | None = None
) -> Access | None:
    """The caller's access to the organization named `slug`: a user (a verified token's subject) or an
    API key (its hash). None when there is no such organization, or the caller is not let in."""
    if (user_id is None) == (key_hash is None):
        raise ValueError("give exactly one of user_id and key_hash")
    parameters = {"slug": slug, "user_id": user_id, "key_hash": key_hash}
    try:
        row = await _lookup(engine, parameters)
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        row = await _lookup(engine, parameters)  # on a fresh connection: the stale ones are gone
    if row is None:
        return None
    return Access(
        organization_id=row.organization_id,
        tenant_id=row.tenant_id,
        role=MemberRole(row.role),
        api_key_id=row.api_key_id,
    )
