"""Turn document rows into `MemoryItem`s, with Work, Mission and Team joined in."""

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from cortex_aggregator.filters import DocumentFilter
from cortex_contracts.memory_item import ItemKind, MemoryItem

SNIPPET_CHARS = 280
NOTE_SOURCE = "note"

ITEM_SELECT = """
SELECT d.id, d.title, d.doc_class, d.source, d.status, d.work_id, w.title AS work_title, w.mission_id,
       m.title AS mission_title, t.id AS team_id, t.name AS team_name, d.agent_id, d.agent_run_id,
       d.updated_at, d.last_indexed_at, left(d.body, 600) AS body_head
FROM kb_documents d
LEFT JOIN works w ON w.id = d.work_id AND w.organization_id = d.organization_id AND w.deleted_at IS NULL
LEFT JOIN missions m ON m.id = w.mission_id AND m.organization_id = d.organization_id AND m.deleted_at IS NULL
LEFT JOIN LATERAL (
    SELECT t.id, t.name FROM team_resources tr
    JOIN teams t ON t.id = tr.team_id AND t.organization_id = tr.organization_id AND t.deleted_at IS NULL
    WHERE tr.organization_id = d.organization_id AND tr.resource_type = 'work' AND tr.resource_id = d.work_id
      AND tr.deleted_at IS NULL
    ORDER BY t.name, t.id LIMIT 1
) t ON true
WHERE d.organization_id = :org AND d.deleted_at IS NULL
"""

BY_IDS = ITEM_SELECT + " AND d.id = ANY(:ids)"

CHUNK_TEXTS = text("SELECT id, text FROM kb_chunks WHERE organization_id = :org AND id = ANY(:ids)")


def shorten(passage: str, limit: int = SNIPPET_CHARS) -> str:
    flat = " ".join(passage.split())
    if len(flat) <= limit:
        return flat
    return flat[:limit].rsplit(" ", 1)[0] + "…"


def to_item(row: Any, snippet: str, score: float | None = None) -> MemoryItem:
    return MemoryItem(
        id=row.id,
        kind=ItemKind.NOTE if row.source == NOTE_SOURCE else ItemKind.DOCUMENT,
        title=row.title,
        snippet=snippet,
        doc_class=row.doc_class,
        source=row.source,
        work_id=row.work_id,
        work_title=row.work_title,
        mission_id=row.mission_id,
        mission_title=row.mission_title,
        team_id=row.team_id,
        team_name=row.team_name,
        agent_id=row.agent_id,
        agent_run_id=row.agent_run_id,
        score=score,
        updated_at=row.updated_at,
        last_indexed_at=row.last_indexed_at,
    )


async def rows_by_id(session: AsyncSession, org: uuid.UUID, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Any]:
    result = await session.execute(text(BY_IDS), {"org": org, "ids": list(ids)})
    return {row.id: row for row in result}


async def chunk_texts(session: AsyncSession, org: uuid.UUID, ids: Sequence[int]) -> dict[int, str]:
    result = await session.execute(CHUNK_TEXTS, {"org": org, "ids": list(ids)})
    return {row.id: row.text for row in result}


async def recent_rows(
    session: AsyncSession,
    org: uuid.UUID,
    where: DocumentFilter,
    n: int,
    after: tuple[datetime, uuid.UUID] | None,
) -> list[Any]:
    """Newest first; keyset-paged on (updated_at, id) so every item appears exactly once."""
    keyset = (
        " AND (d.updated_at, d.id) < (CAST(:after_updated AS timestamptz), CAST(:after_id AS uuid))" if after else ""
    )
    statement = text(f"{ITEM_SELECT}{where.sql}{keyset} ORDER BY d.updated_at DESC, d.id DESC LIMIT :n")
    params: dict[str, Any] = {"org": org, "n": n, **where.params}
    if after:
        params |= {"after_updated": after[0], "after_id": after[1]}
    return list(await session.execute(statement, params))
