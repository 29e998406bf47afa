"""The listing of every category: plugins, load errors, health, and the active choice and why."""

import asyncio
import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import cast

from cortex_contracts.plugins import CategoryStatus, HealthStatus, PluginStatus, PluginsView, SelectionReason
from cortex_embedding.embedder import Embedder, model_name
from cortex_plugins.categories import Category
from cortex_plugins.loading import LoadedPlugin
from cortex_plugins.registry import PluginRegistry
from cortex_plugins.service_embedders import chosen_by_settings
from cortex_store.embedding_space import RecordedSpace

log = logging.getLogger(__name__)

HEALTH_TIMEOUT_SECONDS = 2.0


async def check_health(plugin: object, timeout: float = HEALTH_TIMEOUT_SECONDS) -> str | None:
    """None when healthy (or the plugin reports no health), else the reason."""
    health = getattr(plugin, "health", None)
    if health is None:
        return None
    try:
        result = health()
        reason = await asyncio.wait_for(result, timeout) if inspect.isawaitable(result) else result
    except TimeoutError:
        return f"health check timed out after {timeout:g} s"
    except Exception as exc:
        log.warning("health check of %r failed", getattr(plugin, "name", plugin), exc_info=True)
        return f"health check failed: {type(exc).__name__}: {exc}"
    return None if reason is None else str(reason)


async def _status(loaded: LoadedPlugin, default: str | None, timeout: float) -> PluginStatus:
    common = {"name": loaded.name, "target": loaded.target, "default": loaded.name == default}
    if not loaded.loaded:
        health = HealthStatus.NOT_LOADED if loaded.configured else HealthStatus.NOT_CONFIGURED
        return PluginStatus(**common, loaded=False, error=loaded.error, health=health)
    reason = await check_health(loaded.plugin, timeout)
    health = HealthStatus.OK if reason is None else HealthStatus.UNHEALTHY
    return PluginStatus(**common, loaded=True, health=health, health_detail=reason)


def _space_mismatch(active: LoadedPlugin | None, space: RecordedSpace) -> str | None:
    """Why search is lexical-only although the active embedder is healthy: the index holds another model's
    vectors (QA 34: the listing said ok while every search ran without its dense leg)."""
    if active is None or not active.loaded:
        return None
    model = model_name(cast(Embedder, active.plugin))
    if model == space.model:
        return None
    return (
        f"the index holds embeddings of {space}, not of {model}: search and recall are lexical-only until the "
        f"indexer runs with {model} (it re-embeds everything when it starts on a new model)"
    )


def _expect_index_dimension(plugins: Sequence[LoadedPlugin], space: RecordedSpace) -> None:
    """An embedder of the index's model is healthy only if it answers with the index's dimension: before (QA 47)
    its health said ok while the indexer refused every answer, of another length."""
    for plugin in plugins:
        expect = getattr(plugin.plugin, "expect_dimension", None) if plugin.loaded else None
        if expect is not None and model_name(cast(Embedder, plugin.plugin)) == space.model:
            expect(space.dimension)


async def _category(
    registry: PluginRegistry, each: Category, org_choice: str | None, timeout: float, space: RecordedSpace | None
) -> CategoryStatus:
    plugins = registry.plugins(each.name)
    if each.name == "embedder" and space is not None:
        _expect_index_dimension(plugins, space)
    statuses = list(await asyncio.gather(*(_status(p, each.default, timeout) for p in plugins)))
    pin = registry.pin(each.name)
    common = {"category": each.name, "group": each.group, "env_pin": pin, "org_choice": org_choice}
    if not each.selectable:
        used = sum(p.loaded for p in plugins)
        every = f"every loaded {each.name} is used for its media types ({used} of {len(plugins)} loaded)"
        return CategoryStatus(**common, reason=SelectionReason.MEDIA_TYPE, detail=every, plugins=statuses)
    chosen = registry.selection(each.name, org_choice)
    if each.name == "embedder" and pin is None:
        chosen = chosen_by_settings() or chosen
    detail = chosen.detail
    if each.name == "embedder" and space is not None:
        common["index_space"] = str(space)
        active = next((p for p in plugins if p.name == chosen.name), None)
        detail = "; ".join(part for part in (detail, _space_mismatch(active, space)) if part) or None
    return CategoryStatus(**common, active=chosen.name, reason=chosen.reason, detail=detail, plugins=statuses)


async def plugins_view(
    registry: PluginRegistry,
    org_choices: Mapping[str, str],
    *,
    index_space: RecordedSpace | None = None,
    timeout: float = HEALTH_TIMEOUT_SECONDS,
) -> PluginsView:
    """Every category for one organization. Loads what is not loaded yet in a worker thread. `index_space`
    is the embedding space the index is in, which the embedder's entry compares with the active model."""
    await asyncio.to_thread(registry.load_all)
    categories = await asyncio.gather(
        *(_category(registry, each, org_choices.get(each.name), timeout, index_space) for each in registry.categories)
    )
    return PluginsView(categories=list(categories))
