"""Bind a transaction to one organization: row-level security then shows only that organization's rows.

The setting is transaction-local (`set_config(..., true)`), so a pooled connection never carries one
request's organization into the next.
"""

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

ORG_SETTING = "cortex.organization_id"
APP_ROLE = "cortex_app"


# Under READ COMMITTED every statement sees the commits made before it started: two statements of one
# transaction can read a document before and after the indexer writes it. With these execution options
# the transaction begins REPEATABLE READ, READ ONLY (no extra statement); the pool resets them on return.
ONE_SNAPSHOT: dict[str, object] = {"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}


async def bind_organization(session: AsyncSession, organization_id: uuid.UUID) -> None:
    await session.execute(text(f"SELECT set_config('{ORG_SETTING}', :org, true)"), {"org": str(organization_id)})


@asynccontextmanager
async def org_transaction(
    sessions: async_sessionmaker[AsyncSession],
    organization_id: uuid.UUID,
    *,
    one_snapshot: bool = False,
) -> AsyncIterator[AsyncSession]:
    """One transaction that sees and writes only `organization_id`'s rows; commits on success.

    `one_snapshot`: a read-only transaction whose statements all read the same committed state, for a
    reply assembled from several statements that must agree with one another."""
    async with sessions() as session, session.begin():
        if one_snapshot:
            await session.connection(execution_options=ONE_SNAPSHOT)
        await bind_organization(session, organization_id)
        yield session


def app_role_url(owner_url: str, password: str | None = None) -> str:
    """The same server and database, as the application role: with its `password`, or without one for
    servers that trust local logins, like the embedded one."""
    return make_url(owner_url).set(username=APP_ROLE, password=password).render_as_string(hide_password=False)
