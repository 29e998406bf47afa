"""Disjunctive facet counts: each facet's counts honour every active filter except its own.

With a search text, only the documents that contain at least one of its words are counted (as BM25 reads
them: stemmed, stop words dropped). A search ranks only its best ~100 of them, but its words decide which
documents are about it, whatever the ranking reaches; a text of stop words alone counts nothing.

Counted from the organization's in-memory facet index (facet_index.py), brought up to date with one
statement per request (facet_indexes.py): exact, and as of a snapshot taken after the request began.
Per facet the 100 largest counts are shown (ties by label, then value), and a selected value stays as
a chip with count 0 when nothing matches it. `facet_values` pages through all of one facet's values in
that same order.
"""

import uuid
from collections.abc import Callable
from typing import TypeVar

from cortex_aggregator.cursor import BadCursor, CursorCodec, filter_sets, query_key
from cortex_aggregator.facet_index import Counted, Mask, OrgIndex
from cortex_aggregator.facet_indexes import FacetIndexes
from cortex_aggregator.filters import FACETS, active_values
from cortex_aggregator.lexical_indexes import LexicalIndexes
from cortex_contracts.doc_classes import DOC_CLASSES
from cortex_contracts.rpc import FacetPage, Facets, FacetsRequest, FacetValue, FacetValuesRequest

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


Ranked = tuple[str, str, int]  # value, the label shown, count


def _order(ranked: Ranked) -> tuple[int, str, str]:
    """Largest count first, ties by the label shown, then value."""
    value, label, n = ranked
    return -n, label, value


def _ranked(counted: Counted) -> list[Ranked]:
    """Every value with a count, in the order shown (chips are made only for those shown: an organization
    may have thousands of tags)."""
    facet = counted.facet
    return sorted(((value, _label(facet, value, label), n) for value, label, n in counted.values), key=_order)


def _shown(index: OrgIndex, facet: str, ranked: list[Ranked], selected: list[str]) -> list[FacetValue]:
    """The first 100, then each selected value not among them: with its count (it ranks further down), or as
    a chip with count 0 when nothing matches it any more."""
    shown = [_chip(*value) for value in ranked[:MAX_VALUES]]
    seen = {chip.value for chip in shown}
    further = {value[0]: value for value in ranked[MAX_VALUES:]} if set(selected) - seen else {}
    for value in dict.fromkeys(v for v in selected if v not in seen):
        if value in further:
            shown.append(_chip(*further[value]))
            continue
        name = index.catalog.label(facet, uuid.UUID(value)) if facet in CATALOG_FACETS else None
        shown.append(_chip(value, _label(facet, value, name), 0))
    return shown


def _offered(index: OrgIndex, facet: str) -> bool:
    """Missions and Teams are facets once the organization has any."""
    catalog = index.catalog
    return (facet != "mission" or catalog.has_missions) and (facet != "team" or catalog.has_teams)


def counted(index: OrgIndex, request: FacetsRequest, within: Mask | None) -> dict[str, list[FacetValue]]:
    """`within`: the slots of the documents `request.q` matches, the only ones counted; None without a `q`."""
    facets = [facet for facet in FACETS if _offered(index, facet)]
    selected = active_values(request.filters)
    return {
        facet: _shown(index, facet, _ranked(counts), selected.get(facet, []))
        for facet, counts in index.count(request.filters, facets, within).items()
    }


Counts = TypeVar("Counts")


async def _count(
    indexes: FacetIndexes,
    lexical: LexicalIndexes | None,
    request: FacetsRequest | FacetValuesRequest,
    count: Callable[[OrgIndex, Mask | None], Counts],
) -> Counts:
    """`count` over the organization's facet index, given the slots of the documents `request.q` matches.
    With a `q`, those come from the organization's BM25 index in memory when that is loaded (~5 ms at 100k
    documents), else from PostgreSQL's postings (~40 ms)."""
    org, q = request.organization_id, request.q
    in_memory = await lexical.matching(org, q) if q is not None and lexical is not None else None

    def within(index: OrgIndex, ids: list[uuid.UUID] | None) -> Mask | None:
        if in_memory is not None:
            return index.slots_of_halves(*in_memory)
        return None if ids is None else index.slots_of(ids)

    return await indexes.count(
        org, lambda index, ids: count(index, within(index, ids)), matching=q if in_memory is None else None
    )


async def facets(indexes: FacetIndexes, lexical: LexicalIndexes | None, request: FacetsRequest) -> Facets:
    counts = await _count(indexes, lexical, request, lambda index, within: counted(index, request, within))
    return Facets(
        type=counts["type"],
        work=counts["work"],
        mission=counts.get("mission"),
        team=counts.get("team"),
        source=counts["source"],
        status=counts["status"],
        tag=counts["tag"],
    )


def _query_key(request: FacetValuesRequest) -> str:
    """A cursor is only valid for the request (org, facet, query, filters) it was made for."""
    parts = {"org": request.organization_id, "facet": request.facet, "q": request.q}
    return query_key(parts | {"filters": filter_sets(request.filters)})


def _after(cursors: CursorCodec, request: FacetValuesRequest) -> tuple[int, str, str] | None:
    """The order key of the last value of the page before, from the request's cursor."""
    if request.cursor is None:
        return None
    match cursors.decode_for(request.cursor, _query_key(request)).get("after"):
        case [int(count), str(label), str(value)]:
            return count, label, value
    raise BadCursor("cursor is not valid")


async def facet_values(
    indexes: FacetIndexes, lexical: LexicalIndexes | None, cursors: CursorCodec, request: FacetValuesRequest
) -> FacetPage:
    """One page of a facet's values, after the cursor's in the overview's order. Counts move as documents
    change between pages: a value whose count changed may show on two pages, or on none."""
    after = _after(cursors, request)
    facet = request.facet.value

    def one_facet(index: OrgIndex, within: Mask | None) -> list[Ranked]:
        if not _offered(index, facet):
            return []
        return _ranked(index.count(request.filters, [facet], within)[facet])

    values = await _count(indexes, lexical, request, one_facet)
    if after is not None:
        values = [v for v in values if _order(v) > after]
    page = values[: request.limit]
    next_cursor = None
    if len(values) > request.limit:
        next_cursor = cursors.encode({"k": _query_key(request), "after": list(_order(page[-1]))})
    return FacetPage(facet=request.facet, values=[_chip(*value) for value in page], next_cursor=next_cursor)
