"""`cortex plugins list | use`: the same view as `GET /api/memory/plugins`, and an organization's choice."""

import asyncio
import uuid

from cortex_contracts.plugins import CategoryStatus, HealthStatus, PluginStatus, PluginsView, SelectionReason
from cortex_plugins import PluginRegistry
from cortex_plugins.choices import org_choices, save_choice
from cortex_plugins.listing import plugins_view
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.embedding_space import recorded_space
from cortex_store.tenancy import org_transaction


async def choose_plugin(
    database_url: str, org_id: uuid.UUID, category: str, plugin: str, registry: PluginRegistry
) -> None:
    """Store the organization's choice; raises `PluginChoiceError` for an unknown category or plugin
    (or one that does not load here) before anything is written."""
    await asyncio.to_thread(registry.check_choice, category, plugin)
    engine = make_engine(database_url, pool_size=1)
    try:
        async with org_transaction(make_sessionmaker(engine), org_id) as session:
            await save_choice(session, org_id, category, plugin)
    finally:
        await engine.dispose()


async def list_plugins(database_url: str, org_id: uuid.UUID, registry: PluginRegistry) -> PluginsView:
    engine = make_engine(database_url, pool_size=1)
    try:
        sessions = make_sessionmaker(engine)
        async with org_transaction(sessions, org_id) as session:
            chosen = await org_choices(session, org_id)
            space = await recorded_space(session)
        registry.use_database(sessions)  # so that a plugin keeping its data in PostgreSQL can report health
        return await plugins_view(registry, chosen, index_space=space)
    finally:
        await engine.dispose()


def _plugin_line(plugin: PluginStatus, in_use: bool) -> str:
    mark = "*" if in_use else "-"
    label = f"{plugin.name} (default)" if plugin.default else plugin.name
    if plugin.health is HealthStatus.NOT_CONFIGURED:
        state = f"not configured: {plugin.error}"
    elif not plugin.loaded:
        state = f"not loaded: {plugin.error}"
    elif plugin.health_detail:
        state = f"unhealthy: {plugin.health_detail}"
    else:
        state = "ok"
    return f"  {mark} {label:<28} {state}"


def _category_lines(category: CategoryStatus) -> list[str]:
    every = category.reason is SelectionReason.MEDIA_TYPE  # extractors: every loaded one is in use
    head = f"{category.category}: {'all loaded' if every else category.active or '(none)'} [{category.reason.value}]"
    if category.detail:
        head += f" — {category.detail}"
    if category.index_space:
        head += f" (the index: {category.index_space})"
    lines = [_plugin_line(p, p.loaded if every else p.name == category.active) for p in category.plugins]
    return [head, *lines]


def render(view: PluginsView) -> str:
    """One block per category: the active plugin and why, then each plugin (`*` = active) and its state."""
    return "\n".join(line for category in view.categories for line in _category_lines(category))
