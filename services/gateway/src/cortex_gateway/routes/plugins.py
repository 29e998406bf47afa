"""`GET /api/memory/plugins` (admin): every plugin category, its plugins, their health, and the active choice."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from cortex_contracts.plugins import PluginsView
from cortex_gateway.auth import AdminDep, ResourcesDep
from cortex_gateway.routes.responses import ERRORS, problem
from cortex_plugins import PluginRegistry
from cortex_plugins.choices import org_choices
from cortex_plugins.listing import plugins_view
from cortex_store.embedding_space import recorded_space
from cortex_store.tenancy import org_transaction

router = APIRouter(prefix="/api/memory", tags=["plugins"])


async def plugin_registry(request: Request) -> PluginRegistry:
    registry: PluginRegistry = request.app.state.plugins
    return registry


@router.get(
    "/plugins",
    response_model=PluginsView,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="Plugins by category: load errors, health, and the active choice and why (admin)",
    responses={403: problem("Not an admin"), **ERRORS},
)
async def list_plugins(
    caller: AdminDep, res: ResourcesDep, registry: Annotated[PluginRegistry, Depends(plugin_registry)]
) -> PluginsView:
    async with org_transaction(res.sessions, caller.organization_id) as session:
        chosen = await org_choices(session, caller.organization_id)
        space = await recorded_space(session)
    return await plugins_view(registry, chosen, index_space=space)
