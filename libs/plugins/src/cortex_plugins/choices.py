"""The organizations' plugin choices in PostgreSQL. Callers bind the session to the organization first
(`org_transaction`): row-level security then shows and accepts only that organization's rows.
Like every repository here, these never commit."""

import uuid

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from cortex_store.models import PluginChoice


async def org_choices(session: AsyncSession, organization_id: uuid.UUID) -> dict[str, str]:
    """Category → the plugin the organization chose."""
    rows = await session.execute(
        select(PluginChoice.category, PluginChoice.plugin).where(PluginChoice.organization_id == organization_id)
    )
    return {row.category: row.plugin for row in rows}


async def save_choice(session: AsyncSession, organization_id: uuid.UUID, category: str, plugin: str) -> None:
    statement = insert(PluginChoice).values(organization_id=organization_id, category=category, plugin=plugin)
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=["organization_id", "category"], set_={"plugin": plugin, "updated_at": func.now()}
        )
    )
