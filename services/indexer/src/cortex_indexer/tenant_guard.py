"""Turn a row-level-security refusal into a dead letter: an event that names another organization's
row (say, a document id taken by another org) can never succeed, so retrying it is pointless."""

import functools
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg
from sqlalchemy.exc import DBAPIError

from cortex_messaging.delivery import Delivery, PoisonMessage

INSUFFICIENT_PRIVILEGE = "42501"

Outcome = TypeVar("Outcome")


def _sqlstate(exc: Exception) -> str | None:
    """Through SQLAlchemy, or from asyncpg itself (the statements run on its connections directly)."""
    return getattr(exc.orig if isinstance(exc, DBAPIError) else exc, "sqlstate", None)


def refuse_cross_tenant_writes(
    handler: Callable[[Delivery], Awaitable[Outcome]],
) -> Callable[[Delivery], Awaitable[Outcome]]:
    @functools.wraps(handler)
    async def guarded(delivery: Delivery) -> Outcome:
        try:
            return await handler(delivery)
        except (DBAPIError, asyncpg.PostgresError) as exc:
            if _sqlstate(exc) == INSUFFICIENT_PRIVILEGE:
                raise PoisonMessage("the event names a row that belongs to another organization") from exc
            raise

    return guarded
