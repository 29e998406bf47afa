"""Turn document rows into `MemoryItem`s: one query for the page, with Work titles joined in."""

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from cortex_contracts.memory_item import ItemKind, MemoryItem

SNIPPET_CHARS = 280
NOTE_SOURCE = "note"

ITEM_COLUMNS = """
    d.id, d.title, d.doc_class, d.source, d.work_id, w.title AS work_title, w.mission_id,
    d.updated_at, d.last_indexed_at, left(d.body, 600) AS body_head
"""

BY_IDS = text(f"""
SELECT {ITEM_COLUMNS}
FROM kb_documents d LEFT JOIN works w ON w.id = d.work_id AND w.organization_id = d.organization_id
WHERE d.organization_id = :org AND d.deleted_at IS NULL AND d.id = ANY(:ids)
""")

RECENT = text(f"""
SELECT {ITEM_COLUMNS}
FROM kb_documents d LEFT JOIN works w ON w.id = d.work_id AND w.organization_id = d.organization_id
WHERE d.organization_id = :org AND d.deleted_at IS NULL
  AND (CAST(:after_updated AS timestamptz) IS NULL
       OR (d.updated_at, d.id) < (CAST(:after_updated AS timestamptz), CAST(:after_id AS uuid)))
ORDER BY d.updated_at DESC, d.id DESC
LIMIT :n
""")

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
        score=score,
        updated_at=row.updated_at,
        last_indexed_at=row.last_indexed_at,
    )


async def rows_by_id(session: AsyncSession, org: uuid.UUID, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Any]:
    result = await session.execute(BY_IDS, {"org": org, "ids": list(ids)})
    return {row.id: row for row in result}


async def chunk_texts(session: AsyncSession, org: uuid.UUID, ids: Sequence[int]) -> dict[int, str]:
    result = await session.execute(CHUNK_TEXTS, {"org": org, "ids": list(ids)})
    return {row.id: row.text for row in result}


async def recent_rows(
    session: AsyncSession,
    org: uuid.UUID,
    n: int,
    after: tuple[datetime, uuid.UUID] | None,
) -> list[Any]:
    after_updated, after_id = after if after else (None, None)
    result = await session.execute(
        RECENT,
        {"org": org, "n": n, "after_updated": after_updated, "after_id": after_id},
    )
    return list(result)
