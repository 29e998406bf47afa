"""Waiting until the indexer has handled given events (its inbox, `processed_events`, records each one,
under its organization: `inbox_keys`).

Catalog changes and uploads publish nothing when they are applied; the inbox row is written in the same
transaction as the change, so once it is visible the change is committed.
"""

import asyncio
import uuid
from collections.abc import Iterable

from sqlalchemy import select

from cortex_indexer.bootstrap import CATALOG_CONSUMER, CONSUMER
from cortex_indexer.repository import inbox_key
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.models import ProcessedEvent

__all__ = ["CATALOG_CONSUMER", "CONSUMER", "inbox_keys", "wait_processed"]


def inbox_keys(organization_id: uuid.UUID, event_ids: Iterable[str]) -> list[str]:
    return [inbox_key(organization_id, event_id) for event_id in event_ids]


async def wait_processed(database_url: str, consumer: str, keys: Iterable[str], timeout: float = 30) -> None:
    """Return once every one of `keys` (`inbox_keys`) is in `consumer`'s inbox; fail after `timeout` seconds."""
    wanted = set(keys)
    engine = make_engine(database_url, pool_size=1)
    try:
        sessions = make_sessionmaker(engine)
        async with asyncio.timeout(timeout):
            while True:
                async with sessions() as session:
                    done = set(
                        await session.scalars(
                            select(ProcessedEvent.event_id).where(
                                ProcessedEvent.consumer == consumer, ProcessedEvent.event_id.in_(wanted)
                            )
                        )
                    )
                if done == wanted:
                    return
                await asyncio.sleep(0.05)
    finally:
        await engine.dispose()
