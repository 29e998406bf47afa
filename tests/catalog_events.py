"""Publishing catalog events (Works, Missions, Teams, team resources, members) as an upstream would."""

import uuid
from typing import Any

from nats.js import JetStreamContext

from cortex_contracts.catalog import CatalogEntity, catalog_subject, catalog_type
from cortex_contracts.envelope import new_envelope
from cortex_messaging.publisher import publish_event


async def publish_catalog(
    js: JetStreamContext,
    org_id: uuid.UUID,
    entity: CatalogEntity,
    data: dict[str, Any],
    *,
    action: str = "upserted",
) -> str:
    """Publish one change; returns the event id. `data` uses wire (camelCase) names."""
    event = new_envelope(
        event_type=catalog_type(entity, action),
        source="tests/upstream",
        org_id=org_id,
        data={"organizationId": str(org_id), **data},
    )
    await publish_event(js, catalog_subject(org_id, entity, action), event)
    return event.id
