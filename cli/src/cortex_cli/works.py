"""`cortex work create`: publish the catalog events an upstream service would, for standalone use.

The Mission and Team ids derive from their names, so naming an existing one reuses it.
"""

import time
import uuid

from cortex_cli.unreachable import connect_nats
from cortex_contracts import catalog
from cortex_contracts.catalog import CatalogEntity
from cortex_contracts.envelope import new_envelope
from cortex_messaging.connection import disconnect
from cortex_messaging.publisher import publish_event

SOURCE = "cortex/cli"
NAME_NAMESPACE = uuid.UUID("8d0f6f3e-52a1-4b8e-a6b5-0b1a3c9e7d21")


def named_id(org_id: uuid.UUID, kind: str, name: str) -> uuid.UUID:
    return uuid.uuid5(NAME_NAMESPACE, f"{org_id}:{kind}:{name.strip().casefold()}")


async def create_work(
    nats_url: str,
    org_id: uuid.UUID,
    title: str,
    *,
    mission_title: str | None,
    team_name: str | None,
) -> uuid.UUID:
    work_id = uuid.uuid4()
    version = time.time_ns() // 1000
    changes: list[tuple[CatalogEntity, catalog.CatalogChange]] = []
    mission_id = None
    if mission_title:
        mission_id = named_id(org_id, "mission", mission_title)
        changes.append(
            (
                CatalogEntity.MISSION,
                catalog.MissionUpserted(
                    mission_id=mission_id, organization_id=org_id, title=mission_title, version=version
                ),
            )
        )
    changes.append(
        (
            CatalogEntity.WORK,
            catalog.WorkUpserted(
                work_id=work_id, organization_id=org_id, title=title, mission_id=mission_id, version=version
            ),
        )
    )
    if team_name:
        team_id = named_id(org_id, "team", team_name)
        changes.append(
            (
                CatalogEntity.TEAM,
                catalog.TeamUpserted(team_id=team_id, organization_id=org_id, name=team_name, version=version),
            )
        )
        changes.append(
            (
                CatalogEntity.TEAM_RESOURCE,
                catalog.TeamResourceUpserted(
                    team_id=team_id, organization_id=org_id, resource_type="work", resource_id=work_id, version=version
                ),
            )
        )
    nc = await connect_nats(nats_url)
    try:
        js = nc.jetstream()
        for entity, change in changes:
            event = new_envelope(
                event_type=catalog.catalog_type(entity, "upserted"),
                source=SOURCE,
                org_id=org_id,
                data=change.model_dump(mode="json", by_alias=True, exclude_none=True),
            )
            await publish_event(js, catalog.catalog_subject(org_id, entity, "upserted"), event)
    finally:
        await disconnect(nc)
    return work_id
