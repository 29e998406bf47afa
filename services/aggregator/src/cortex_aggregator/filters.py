"""Facet filters as SQL over `kb_documents d`: OR within a facet, AND across facets.

Search (the feed with `q`) filters with these; the feed without `q` and the facets apply the same
filters to the in-memory facet index (facet_index.py). Every fragment is bounded by `:org` in the code
itself; row-level security is the second wall.
"""

from dataclasses import dataclass, field
from typing import Any

from cortex_contracts.rpc import FeedFilters

FACETS = ("type", "work", "mission", "team", "source", "status", "tag")

# Under row-level security only leakproof operators become index conditions. Array overlap
# (`tags && …`) is not one, so the tag filter reads kb_document_tags, whose key is plain text equality.
_CONDITIONS = {
    "type": "d.doc_class = ANY(CAST(:f_type AS text[]))",
    "work": "d.work_id = ANY(CAST(:f_work AS uuid[]))",
    "mission": (
        "d.work_id IN (SELECT w.id FROM works w WHERE w.organization_id = :org AND w.deleted_at IS NULL"
        " AND w.mission_id = ANY(CAST(:f_mission AS uuid[])))"
    ),
    "team": (
        "d.work_id IN (SELECT tr.resource_id FROM team_resources tr WHERE tr.organization_id = :org"
        " AND tr.resource_type = 'work' AND tr.deleted_at IS NULL AND tr.team_id = ANY(CAST(:f_team AS uuid[])))"
    ),
    "source": "d.source = ANY(CAST(:f_source AS text[]))",
    "status": "d.status = ANY(CAST(:f_status AS text[]))",
    "tag": (
        "d.id IN (SELECT dt.document_id FROM kb_document_tags dt WHERE dt.organization_id = :org"
        " AND dt.tag = ANY(CAST(:f_tag AS text[])))"
    ),
}


@dataclass(frozen=True)
class DocumentFilter:
    sql: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return bool(self.params)


def active_values(filters: FeedFilters) -> dict[str, list[str]]:
    return {facet: [str(v) for v in getattr(filters, facet)] for facet in FACETS if getattr(filters, facet)}


def _params(values: dict[str, list[str]]) -> dict[str, Any]:
    return {f"f_{facet}": v for facet, v in values.items()}


def document_filter(filters: FeedFilters, *, except_facet: str | None = None) -> DocumentFilter:
    """`AND ...` conditions (or "") for the active filters, leaving out `except_facet`."""
    values = {facet: v for facet, v in active_values(filters).items() if facet != except_facet}
    sql = "".join(f" AND {_CONDITIONS[facet]}" for facet in values)
    return DocumentFilter(sql, _params(values))
