"""Disjunctive facet counts: each facet's counts honour every active filter except its own."""

import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_aggregator.filters import active_values, document_filter
from cortex_contracts.doc_classes import DOC_CLASSES
from cortex_contracts.rpc import Facets, FacetsRequest, FacetValue
from cortex_store.tenancy import org_transaction

MAX_VALUES = 100
LIVE = "d.organization_id = :org AND d.deleted_at IS NULL"

# value (and label) per facet: the grouping each count query runs.
_GROUPINGS = {
    "type": ("d.doc_class", "d.doc_class", "", "d.doc_class IS NOT NULL"),
    "work": (
        "d.work_id::text",
        "w.title",
        " JOIN works w ON w.id = d.work_id AND w.organization_id = d.organization_id AND w.deleted_at IS NULL",
        "true",
    ),
    "mission": (
        "m.id::text",
        "m.title",
        " JOIN works w ON w.id = d.work_id AND w.organization_id = d.organization_id AND w.deleted_at IS NULL"
        " JOIN missions m ON m.id = w.mission_id AND m.organization_id = d.organization_id AND m.deleted_at IS NULL",
        "true",
    ),
    "team": (
        "t.id::text",
        "t.name",
        " JOIN team_resources tr ON tr.organization_id = d.organization_id AND tr.resource_type = 'work'"
        " AND tr.resource_id = d.work_id AND tr.deleted_at IS NULL"
        " JOIN teams t ON t.id = tr.team_id AND t.organization_id = d.organization_id AND t.deleted_at IS NULL",
        "true",
    ),
    "source": ("d.source", "d.source", "", "true"),
    "status": ("d.status", "d.status", "", "true"),
    "tag": ("tag", "tag", " CROSS JOIN LATERAL unnest(d.tags) AS tag", "true"),
}

HAS_MISSIONS = text(
    "SELECT EXISTS (SELECT 1 FROM works WHERE organization_id = :org AND deleted_at IS NULL AND mission_id IS NOT NULL)"
)
HAS_TEAMS = text("SELECT EXISTS (SELECT 1 FROM teams WHERE organization_id = :org AND deleted_at IS NULL)")


def _label(facet: str, value: str, label: str | None) -> str:
    if facet == "type":
        return DOC_CLASSES.get(value, value)
    if facet == "status":
        return value.capitalize()
    return label or value


async def _facet(session: AsyncSession, org: uuid.UUID, request: FacetsRequest, facet: str) -> list[FacetValue]:
    value, label, joins, condition = _GROUPINGS[facet]
    where = document_filter(request.filters, except_facet=facet)
    # Each grouping yields at most one row per document and value (tags are stored de-duplicated, a
    # Team owns a Work once), so a plain count(*) counts documents — no per-group DISTINCT sort.
    statement = text(f"""
        SELECT {value} AS value, min({label}) AS label, count(*) AS count
        FROM kb_documents d{joins}
        WHERE {LIVE} AND {condition}{where.sql}
        GROUP BY 1 ORDER BY count DESC, label, value LIMIT {MAX_VALUES}
    """)
    rows: list[Any] = list(await session.execute(statement, {"org": org, **where.params}))
    found = [FacetValue(value=row.value, label=_label(facet, row.value, row.label), count=row.count) for row in rows]
    # A selected value stays visible as a chip even when nothing matches it any more.
    seen = {v.value for v in found}
    missing = [v for v in dict.fromkeys(active_values(request.filters).get(facet, [])) if v not in seen]
    names = await _catalog_names(session, org, facet, missing) if missing else {}
    return found + [FacetValue(value=v, label=_label(facet, v, names.get(v)), count=0) for v in missing]


_NAMES = {
    "work": "SELECT id::text AS value, title AS label FROM works",
    "mission": "SELECT id::text AS value, title AS label FROM missions",
    "team": "SELECT id::text AS value, name AS label FROM teams",
}


async def _catalog_names(session: AsyncSession, org: uuid.UUID, facet: str, values: list[str]) -> dict[str, str]:
    """Titles of catalog entries (Works, Missions, Teams) that matched nothing but are selected."""
    if facet not in _NAMES:
        return {}
    statement = text(f"{_NAMES[facet]} WHERE organization_id = :org AND id::text = ANY(:values) AND deleted_at IS NULL")
    return {row.value: row.label for row in await session.execute(statement, {"org": org, "values": values})}


async def facets(sessions: async_sessionmaker[AsyncSession], request: FacetsRequest) -> Facets:
    org = request.organization_id
    async with org_transaction(sessions, org) as session:
        has_missions = bool(await session.scalar(HAS_MISSIONS, {"org": org}))
        has_teams = bool(await session.scalar(HAS_TEAMS, {"org": org}))
        counts = {
            facet: await _facet(session, org, request, facet)
            for facet in _GROUPINGS
            if (facet != "mission" or has_missions) and (facet != "team" or has_teams)
        }
    return Facets(
        type=counts["type"],
        work=counts["work"],
        mission=counts.get("mission"),
        team=counts.get("team"),
        source=counts["source"],
        status=counts["status"],
        tag=counts["tag"],
    )
