"""Turn a row-level-security refusal into a dead letter: an event that names another organization's
row (say, a document id taken by another org) can never succeed, so retrying it is pointless."""

import functools
from collections.abc import Awaitable, Callable

from sqlalchemy.exc import DBAPIError

from cortex_messaging.delivery import Delivery, PoisonMessage

INSUFFICIENT_PRIVILEGE = "42501"

Handler = Callable[[Delivery], Awaitable[None]]


def refuse_cross_tenant_writes(handler: Handler) -> Handler:
    @functools.wraps(handler)
    async def guarded(delivery: Delivery) -> None:
        try:
            await handler(delivery)
        except DBAPIError as exc:
            if getattr(exc.orig, "sqlstate", None) == INSUFFICIENT_PRIVILEGE:
                raise PoisonMessage("the event names a row that belongs to another organization") from exc
            raise

    return guarded
