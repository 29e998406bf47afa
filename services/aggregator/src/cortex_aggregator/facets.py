"""Disjunctive facet counts: each facet's counts honour every active filter except its own.

With a search text, only the documents that contain at least one of its words are counted (as BM25 reads
them: stemmed, stop words dropped). A search ranks only its best ~100 of them, but its words decide which
documents are about it, whatever the ranking reaches; a text of stop words alone counts nothing.

Counted from the organization's in-memory facet index (facet_index.py), brought up to date with one
statement per request (facet_indexes.py): exact, and as of a snapshot taken after the request began.
Per facet the 100 largest counts are shown (ties by label, then value), and a selected value stays as
a chip with count 0 when nothing matches it.
"""

import uuid

from cortex_aggregator.facet_index import Counted, Mask, OrgIndex
from cortex_aggregator.facet_indexes import FacetIndexes
from cortex_aggregator.filters import FACETS, active_values
from cortex_aggregator.lexical_indexes import LexicalIndexes
from cortex_contracts.doc_classes import DOC_CLASSES
from cortex_contracts.rpc import Facets, FacetsRequest, FacetValue

MAX_VALUES = 100
CATALOG_FACETS = ("work", "mission", "team")


def _label(facet: str, value: str, label: str | None) -> str:
    if facet == "type":
        return DOC_CLASSES.get(value, value)
    if facet == "status":
        return value.capitalize()
    return label or value


def _chip(value: str, label: str, count: int) -> FacetValue:
    """Built without validation: the values are the index's own strings and counts (~200 chips a request,
    validating them cost about a millisecond)."""
    return FacetValue.model_construct(value=value, label=label, count=count)


def _shown(counted: Counted) -> list[FacetValue]:
    ranked = sorted(counted.values, key=lambda v: (-v[2], v[1] or "", v[0]))[:MAX_VALUES]
    return [_chip(value, _label(counted.facet, value, label), n) for value, label, n in ranked]


def _with_selected(index: OrgIndex, request: FacetsRequest, found: dict[str, list[FacetValue]]) -> None:
    """A selected value stays visible as a chip even when nothing matches it any more."""
    for facet, selected in active_values(request.filters).items():
        if facet not in found:
            continue
        seen = {v.value for v in found[facet]}
        for value in dict.fromkeys(v for v in selected if v not in seen):
            name = index.catalog.label(facet, uuid.UUID(value)) if facet in CATALOG_FACETS else None
            found[facet].append(_chip(value, _label(facet, value, name), 0))


def counted(index: OrgIndex, request: FacetsRequest, within: Mask | None) -> dict[str, list[FacetValue]]:
    """`within`: the slots of the documents `request.q` matches, the only ones counted; None without a `q`."""
    catalog = index.catalog
    facets = [f for f in FACETS if (f != "mission" or catalog.has_missions) and (f != "team" or catalog.has_teams)]
    found = {facet: _shown(counts) for facet, counts in index.count(request.filters, facets, within).items()}
    _with_selected(index, request, found)
    return found


async def facets(indexes: FacetIndexes, lexical: LexicalIndexes | None, request: FacetsRequest) -> Facets:
    """With a `q`, its documents come from the organization's BM25 index in memory when that is loaded (~5 ms
    at 100k documents), else from PostgreSQL's postings (~40 ms)."""
    org, q = request.organization_id, request.q
    in_memory = await lexical.matching(org, q) if q is not None and lexical is not None else None

    def within(index: OrgIndex, ids: list[uuid.UUID] | None) -> Mask | None:
        if in_memory is not None:
            return index.slots_of_halves(*in_memory)
        return None if ids is None else index.slots_of(ids)

    counts = await indexes.count(
        org,
        lambda index, ids: counted(index, request, within(index, ids)),
        matching=q if in_memory is None else None,
    )
    return Facets(
        type=counts["type"],
        work=counts["work"],
        mission=counts.get("mission"),
        team=counts.get("team"),
        source=counts["source"],
        status=counts["status"],
        tag=counts["tag"],
    )
