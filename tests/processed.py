"""Waiting until the indexer has handled given events (its inbox, `processed_events`, records each id).

Catalog changes and uploads publish nothing when they are applied; the inbox row is written in the same
transaction as the change, so once it is visible the change is committed.
"""

import asyncio
from collections.abc import Iterable

from sqlalchemy import select

from cortex_indexer.bootstrap import CATALOG_CONSUMER, CONSUMER
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.models import ProcessedEvent

__all__ = ["CATALOG_CONSUMER", "CONSUMER", "wait_processed"]


async def wait_processed(database_url: str, consumer: str, event_ids: Iterable[str], timeout: float = 30) -> None:
    """Return once every one of `event_ids` is in `consumer`'s inbox; fail after `timeout` seconds."""
    wanted = set(event_ids)
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
