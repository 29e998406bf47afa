"""`/api/memory`: the org feed and search, facets, stats, item detail.

Each route relays the aggregator's result as it came (`relay_aggregator`); its `response_model` is what
the OpenAPI document says the body is, and the relayed body has been validated against it."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import Response
from pydantic import AfterValidator

from cortex_contracts import subjects
from cortex_contracts.base import NO_NUL
from cortex_contracts.memory_item import ItemStatus
from cortex_contracts.rpc import (
    MAX_FACET_CURSOR,
    MAX_FACET_PAGE,
    MAX_FEED_LIMIT,
    MAX_FILTER_VALUES,
    MAX_QUERY_CHARS,
    FacetName,
    FacetPage,
    FacetPageReply,
    Facets,
    FacetsReply,
    FacetsRequest,
    FacetValuesRequest,
    FeedFilters,
    FeedPage,
    FeedReply,
    FeedRequest,
    FilterText,
    ItemDetail,
    ItemReply,
    ItemRequest,
    RetrievalMode,
    Sort,
    Stats,
    StatsReply,
    StatsRequest,
    folded_query,
)
from cortex_gateway.aggregator_client import relay_aggregator
from cortex_gateway.auth import CallerDep, ResourcesDep
from cortex_gateway.routes.responses import ERRORS, problem

router = APIRouter(prefix="/api/memory", tags=["memory"])


async def feed_filters(
    type: Annotated[list[FilterText], Query(max_length=MAX_FILTER_VALUES, description="docClass (repeatable)")] = [],  # noqa: A002, B006
    work: Annotated[list[uuid.UUID], Query(max_length=MAX_FILTER_VALUES, description="Work id (repeatable)")] = [],  # noqa: B006
    mission: Annotated[list[uuid.UUID], Query(max_length=MAX_FILTER_VALUES, description="Mission id")] = [],  # noqa: B006
    team: Annotated[list[uuid.UUID], Query(max_length=MAX_FILTER_VALUES, description="Team id")] = [],  # noqa: B006
    source: Annotated[list[FilterText], Query(max_length=MAX_FILTER_VALUES, description="Source")] = [],  # noqa: B006
    status: Annotated[list[ItemStatus], Query(max_length=MAX_FILTER_VALUES, description="Status")] = [],  # noqa: B006
    tag: Annotated[list[FilterText], Query(max_length=MAX_FILTER_VALUES, description="Tag")] = [],  # noqa: B006
) -> FeedFilters:
    """OR within one facet, AND across facets."""
    return FeedFilters(type=type, work=work, mission=mission, team=team, source=source, status=status, tag=tag)


FiltersDep = Annotated[FeedFilters, Depends(feed_filters)]


@router.get(
    "",
    response_model=FeedPage,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="Search or browse everything the organization knows",
    responses=ERRORS,
)
async def get_memory(
    caller: CallerDep,
    res: ResourcesDep,
    filters: FiltersDep,
    q: Annotated[
        str | None,
        Query(max_length=MAX_QUERY_CHARS, pattern=NO_NUL, description="Search text; absent = newest first."),
        AfterValidator(folded_query),
    ] = None,
    sort: Annotated[Sort | None, Query(description="relevance (default with q) or updated.")] = None,
    mode: Annotated[RetrievalMode, Query(description="hybrid, lexical (BM25 only) or semantic.")] = (
        RetrievalMode.HYBRID
    ),
    limit: Annotated[int, Query(ge=1, le=MAX_FEED_LIMIT, description="Page size.")] = 20,
    cursor: Annotated[str | None, Query(max_length=2000, description="`nextCursor` of the previous page.")] = None,
) -> Response:
    request = FeedRequest(
        organization_id=caller.organization_id,
        q=(q or "").strip() or None,
        filters=filters,
        sort=sort,
        mode=mode,
        limit=limit,
        cursor=cursor or None,  # `cursor=` with nothing after it: the first page
    )
    return await relay_aggregator(res, subjects.RPC_AGGREGATOR_FEED, request, FeedReply, FeedPage)


@router.get(
    "/facets",
    response_model=Facets,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="Facet values with disjunctive counts",
    responses=ERRORS,
)
async def get_facets(
    caller: CallerDep,
    res: ResourcesDep,
    filters: FiltersDep,
    q: Annotated[
        str | None,
        Query(
            max_length=MAX_QUERY_CHARS,
            pattern=NO_NUL,
            description="Count only the documents that contain at least one of its words, as search's lexical "
            "leg reads them (stemmed, stop words dropped); absent = every document.",
        ),
        AfterValidator(folded_query),
    ] = None,
) -> Response:
    request = FacetsRequest(organization_id=caller.organization_id, q=(q or "").strip() or None, filters=filters)
    return await relay_aggregator(res, subjects.RPC_AGGREGATOR_FACETS, request, FacetsReply, Facets)


@router.get(
    "/facets/{facet}",
    response_model=FacetPage,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="Every value of one facet, page by page",
    responses=ERRORS,
)
async def get_facet_values(
    caller: CallerDep,
    res: ResourcesDep,
    filters: FiltersDep,
    facet: Annotated[FacetName, Path(description="The facet whose values to list.")],
    q: Annotated[
        str | None,
        Query(max_length=MAX_QUERY_CHARS, pattern=NO_NUL, description="As for `/facets`: count only its documents."),
        AfterValidator(folded_query),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_FACET_PAGE, description="Page size.")] = 100,
    cursor: Annotated[
        str | None, Query(max_length=MAX_FACET_CURSOR, description="`nextCursor` of the previous page.")
    ] = None,
) -> Response:
    """The values `/facets` cuts at its 100 largest, in its order (largest count first), with the same
    disjunctive counts."""
    request = FacetValuesRequest(
        organization_id=caller.organization_id,
        facet=facet,
        q=(q or "").strip() or None,
        filters=filters,
        limit=limit,
        cursor=cursor or None,
    )
    return await relay_aggregator(res, subjects.RPC_AGGREGATOR_FACET_VALUES, request, FacetPageReply, FacetPage)


@router.get(
    "/stats",
    response_model=Stats,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="Headline numbers",
    responses=ERRORS,
)
async def get_stats(caller: CallerDep, res: ResourcesDep) -> Response:
    request = StatsRequest(organization_id=caller.organization_id)
    return await relay_aggregator(res, subjects.RPC_AGGREGATOR_STATS, request, StatsReply, Stats)


@router.get(
    "/documents/{document_id}",
    response_model=ItemDetail,
    response_model_by_alias=True,
    response_model_exclude_none=True,
    summary="One item in full",
    responses={**ERRORS, 404: problem("No such item (or organization)")},
)
async def get_document(
    caller: CallerDep,
    res: ResourcesDep,
    document_id: Annotated[uuid.UUID, Path(description="Item id.")],
) -> Response:
    request = ItemRequest(organization_id=caller.organization_id, document_id=document_id)
    return await relay_aggregator(res, subjects.RPC_AGGREGATOR_ITEM, request, ItemReply, ItemDetail)
