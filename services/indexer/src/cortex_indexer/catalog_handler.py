"""Entry point for `catalog.>` events: validate, apply one versioned change in the org's transaction."""

import logging
from collections.abc import Awaitable, Callable

from pydantic import ValidationError

from cortex_contracts import catalog as events
from cortex_indexer import repository
from cortex_indexer.catalog import apply_change
from cortex_indexer.indexing import IndexingContext, UnknownOrganization
from cortex_indexer.tenant_guard import refuse_cross_tenant_writes
from cortex_messaging.delivery import Delivery, PoisonMessage, brief
from cortex_store.tenancy import bind_organization

log = logging.getLogger(__name__)


def _parse(delivery: Delivery) -> tuple[events.CatalogEntity, events.CatalogChange, bool]:
    entity_name, _, action = delivery.action.partition(".")
    try:
        entity = events.CatalogEntity(entity_name)
    except ValueError as exc:
        raise PoisonMessage(f"unknown catalog entity {entity_name!r}") from exc
    models = {"upserted": events.UPSERTED, "deleted": events.DELETED}.get(action)
    if models is None:
        raise PoisonMessage(f"unknown catalog action {action!r}")
    try:
        payload = models[entity].from_wire(delivery.event.data)
    except ValidationError as exc:
        raise PoisonMessage(f"invalid {delivery.action} payload: {brief(exc)}") from exc
    if payload.organization_id != delivery.event.orgid:
        raise PoisonMessage("payload organizationId differs from the event's orgid")
    return entity, payload, action == "deleted"


def make_catalog_handler(ctx: IndexingContext) -> Callable[[Delivery], Awaitable[None]]:
    @refuse_cross_tenant_writes
    async def handle(delivery: Delivery) -> None:
        entity, payload, deleted = _parse(delivery)
        org = delivery.event.orgid
        async with ctx.sessions() as session, session.begin():
            await bind_organization(session, org)
            if not await repository.claim_event(session, ctx.consumer, repository.inbox_key(org, delivery.event.id)):
                return
            if not await repository.organization_exists(session, org):
                raise UnknownOrganization(org)
            applied = await apply_change(session, entity, payload, org, deleted=deleted)
        log.info("%s %s (%s)", delivery.action, "applied" if applied else "superseded", delivery.event.subject)

    return handle
