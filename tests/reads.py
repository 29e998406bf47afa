"""A test's SQLAlchemy transaction, read as the search path reads (`OrgReads`), on the same connection."""

from sqlalchemy.ext.asyncio import AsyncSession

from cortex_store.database import driver_connection
from cortex_store.org_reads import OrgReads


async def reads_of(session: AsyncSession) -> OrgReads:
    return OrgReads(await driver_connection(session), walk_ef=None)
