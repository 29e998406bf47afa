"""Admit organizations to the HNSW graph once they are big enough to walk it (migration 0014).

Below the aggregator's `exact_scan_max_chunks` an organization's vectors are scanned exactly, so its
passages stay out of the graph and cost nothing to insert there. A periodic pass asks
`cortex_enter_ann` about every organization not admitted yet, each in its own transaction: it counts
the organization's embedded passages no further than the bound, and over it marks them all. Copies of
the indexer may pass at once: admission is idempotent.
"""

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_store.ann_graph import EXACT_SCAN_MAX_CHUNKS

log = logging.getLogger(__name__)

OUTSIDE = text("SELECT id FROM organizations WHERE NOT ann_indexed ORDER BY id")
ENTER = text("SELECT cortex_enter_ann(:org, :min_chunks)")


@dataclass
class AnnAdmission:
    sessions: async_sessionmaker[AsyncSession]
    min_chunks: int = EXACT_SCAN_MAX_CHUNKS
    interval_seconds: float = 30.0

    async def run(self, stop: asyncio.Event) -> None:
        """Pass after pass until `stop`; a failing pass (a deadlock with a backfill, the database
        away) is logged and the next one tries again."""
        while not stop.is_set():
            try:
                await self.run_pass()
            except Exception:
                log.exception("HNSW admission pass failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval_seconds)

    async def run_pass(self) -> list[uuid.UUID]:
        """The organizations admitted by this pass."""
        async with self.sessions() as session:
            outside = list((await session.scalars(OUTSIDE)).all())
        admitted = []
        for org in outside:
            async with self.sessions() as session, session.begin():
                if await session.scalar(ENTER, {"org": org, "min_chunks": self.min_chunks}):
                    admitted.append(org)
        for org in admitted:
            log.info("organization %s admitted to the HNSW graph (over %d embedded passages)", org, self.min_chunks)
        return admitted
