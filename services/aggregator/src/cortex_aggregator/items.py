"""Turn document rows into `MemoryItem`s, with Work, Mission and Team joined in."""

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from cortex_contracts.memory_item import ItemKind, ItemStatus, MemoryItem
from cortex_store import records

SNIPPET_CHARS = 280
NOTE_SOURCE = "note"
STATUS_BY_VALUE = {status.value: status for status in ItemStatus}
KIND_BY_SOURCE = {NOTE_SOURCE: ItemKind.NOTE, "upload": ItemKind.UPLOAD}  # the indexer's `upload` source

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

# A search page: each document with the passage that matched it, in one statement. A document ranked
# without one (BM25 from memory ranks documents) shows the passage where a query word weighs most
# (weight x frequency), as the lexical leg in SQL picks it.
WITH_PASSAGES = f"""
WITH items AS ({BY_IDS}), picked AS MATERIALIZED (
    SELECT pick.id, coalesce(pick.chunk_id, (
        SELECT p.chunk_id
        FROM kb_chunks pc
        JOIN kb_postings p ON p.chunk_id = pc.id AND p.organization_id = :org
        JOIN unnest(CAST(:lexemes AS text[]), CAST(:weights AS float8[])) AS word(lexeme, weight) USING (lexeme)
        WHERE pc.organization_id = :org AND pc.document_id = pick.id
        ORDER BY word.weight * p.tf DESC, p.chunk_id LIMIT 1
    )) AS chunk_id
    FROM unnest(CAST(:ids AS uuid[]), CAST(:chunks AS bigint[])) AS pick(id, chunk_id)
)
SELECT items.*, c.text AS passage
FROM items
JOIN picked ON picked.id = items.id
LEFT JOIN kb_chunks c ON c.organization_id = :org AND c.id = picked.chunk_id
"""


def shorten(passage: str, limit: int = SNIPPET_CHARS, around: Sequence[str] = ()) -> str:
    """The passage on one line, cut to about `limit` characters at a space. With `around` (word starts,
    most telling first), the cut keeps the first place one of them begins a word, when it lies further on."""
    flat = " ".join(passage.split())
    if len(flat) <= limit:
        return flat
    start = _start_before(flat, _first_match(flat, around), limit)
    cut = flat[start : start + limit]
    return ("…" if start else "") + (cut if start + limit >= len(flat) else cut.rsplit(" ", 1)[0] + "…")


def _first_match(flat: str, around: Sequence[str]) -> int | None:
    lowered = flat.lower()
    for start in around:  # the most telling word that occurs wins over an earlier, commoner one
        if start and (found := re.search(rf"(?<!\w){re.escape(start.lower())}", lowered)):
            return found.start()
    return None


def _start_before(flat: str, at: int | None, limit: int) -> int:
    """Where to start so that a match at `at` shows with some words before it; 0 when it shows from the start."""
    if at is None or at < limit * 3 // 4:
        return 0
    start = min(at - limit // 4, len(flat) - limit)
    return flat.find(" ", start) + 1 or start


def word_starts(q: str | None, weights: Mapping[str, float]) -> list[str]:
    """What a query's words begin with, most telling first: the lexical leg's stems by weight when it ran,
    else the query's own words, a few letters short of an inflection (`rhinoceroses` → `rhinocero`)."""
    if weights:
        return sorted(weights, key=lambda stem: -weights[stem])
    words = sorted({word for word in re.findall(r"\w+", (q or "").lower()) if len(word) > 2}, key=len, reverse=True)
    return [word[: max(3, len(word) - 3)] for word in words]


def to_item(row: Any, snippet: str, score: float | None = None) -> MemoryItem:
    """Built without validation: every value comes typed from our own columns (validating 20 items cost
    ~1 ms of a search), and the reply is still serialized by the model."""
    return MemoryItem.model_construct(
        id=row.id,
        kind=KIND_BY_SOURCE.get(row.source, ItemKind.DOCUMENT),
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
        status=STATUS_BY_VALUE.get(row.status),  # the enum itself: model_construct does not convert
        score=score,
        updated_at=row.updated_at,
        last_indexed_at=row.last_indexed_at,
    )


async def rows_by_id(connection: Any, org: uuid.UUID, ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Any]:
    """Rows by document id, read on `connection` (asyncpg's, in a transaction bound to `org`)."""
    return {row.id: row for row in await records.fetch_on(connection, BY_IDS, {"org": org, "ids": list(ids)})}


async def rows_with_passages(
    connection: Any,
    org: uuid.UUID,
    picks: Sequence[tuple[uuid.UUID, int | None]],
    weights: Mapping[str, float] | None = None,
) -> dict[uuid.UUID, Any]:
    """Rows by document id, each with `passage`: the text of the chunk picked for it, or for a document
    picked without one, of its passage where a word of `weights` (lexeme -> weight) weighs most."""
    words = dict(weights or {})
    params = {
        "org": org,
        "ids": [doc for doc, _ in picks],
        "chunks": [chunk for _, chunk in picks],
        "lexemes": list(words),
        "weights": list(words.values()),
    }
    return {row.id: row for row in await records.fetch_on(connection, WITH_PASSAGES, params)}
