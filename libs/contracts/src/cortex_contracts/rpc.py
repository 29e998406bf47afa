"""Request/reply models for `rpc.aggregator.*`. Every request names the caller's organization."""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Generic, TypeVar
from uuid import UUID

from pydantic import AfterValidator, Field, StringConstraints

from cortex_contracts.base import NO_NUL, WireModel, nfc_within
from cortex_contracts.documents import class_key, tag_key
from cortex_contracts.memory import AgentMemories, Recalled
from cortex_contracts.memory_item import ItemStatus, MemoryItem

MAX_FEED_LIMIT = 100
MAX_FILTER_VALUES = 50
MAX_QUERY_CHARS = 4000
_folded_query = nfc_within(MAX_QUERY_CHARS)


def folded_query(q: str | None) -> str | None:
    """A query in NFC, within its limit once folded (the gateway checks it so, as the aggregator will)."""
    return None if q is None else _folded_query(q)


Query = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_CHARS, pattern=NO_NUL),
    AfterValidator(_folded_query),
]
# Kept without surrounding white space, as the values they select are (a blank one is refused).
FilterText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200, pattern=NO_NUL)]


class Sort(StrEnum):
    RELEVANCE = "relevance"
    UPDATED = "updated"


class RetrievalMode(StrEnum):
    HYBRID = "hybrid"
    LEXICAL = "lexical"
    SEMANTIC = "semantic"


class FeedFilters(WireModel):
    """OR within one facet, AND across facets. Empty = no filter on that facet."""

    type: list[Annotated[FilterText, AfterValidator(class_key)]] = Field(
        default_factory=list, max_length=MAX_FILTER_VALUES, description="docClass values, in any case."
    )
    work: list[UUID] = Field(default_factory=list, max_length=MAX_FILTER_VALUES, description="Work ids.")
    mission: list[UUID] = Field(default_factory=list, max_length=MAX_FILTER_VALUES, description="Mission ids.")
    team: list[UUID] = Field(default_factory=list, max_length=MAX_FILTER_VALUES, description="Team ids.")
    source: list[FilterText] = Field(default_factory=list, max_length=MAX_FILTER_VALUES, description="Sources.")
    status: list[ItemStatus] = Field(default_factory=list, max_length=MAX_FILTER_VALUES, description="Statuses.")
    tag: list[Annotated[FilterText, AfterValidator(tag_key)]] = Field(
        default_factory=list, max_length=MAX_FILTER_VALUES, description="Tags, in any case (stored lower-cased, NFC)."
    )


class FeedRequest(WireModel):
    organization_id: UUID = Field(description="The caller's organization; every result is bounded by it.")
    q: Query | None = Field(default=None, description="Search text; absent = most recently updated first.")
    filters: FeedFilters = Field(default_factory=FeedFilters, description="Facet filters.")
    sort: Sort | None = Field(default=None, description="Default: relevance with q, updated without.")
    mode: RetrievalMode = Field(
        default=RetrievalMode.HYBRID, description="hybrid (BM25 + embeddings), lexical (BM25) or semantic."
    )
    limit: int = Field(default=20, ge=1, le=MAX_FEED_LIMIT, description="Page size.")
    cursor: str | None = Field(default=None, max_length=2000, description="Opaque cursor from a previous page.")


class FeedPage(WireModel):
    items: list[MemoryItem] = Field(description="This page of items, best (or newest) first.")
    next_cursor: str | None = Field(default=None, description="Cursor for the next page; absent from the last page.")


class FacetsRequest(WireModel):
    organization_id: UUID
    q: Query | None = Field(
        default=None, description="Count only the documents with at least one of its words; absent = all."
    )
    filters: FeedFilters = Field(default_factory=FeedFilters)


class FacetValue(WireModel):
    value: str = Field(description="The value to filter by.")
    label: str = Field(description="How to show it.")
    count: int = Field(ge=0, description="Items matching every other active filter and this value.")


class Facets(WireModel):
    """Disjunctive counts: each facet honours every active filter except its own."""

    type: list[FacetValue]
    work: list[FacetValue]
    mission: list[FacetValue] | None = Field(default=None, description="Absent when no Work has a Mission.")
    team: list[FacetValue] | None = Field(default=None, description="Absent when the organization has no Teams.")
    source: list[FacetValue]
    status: list[FacetValue]
    tag: list[FacetValue]


class FacetName(StrEnum):
    TYPE = "type"
    WORK = "work"
    MISSION = "mission"
    TEAM = "team"
    SOURCE = "source"
    STATUS = "status"
    TAG = "tag"


MAX_FACET_PAGE = 1000
# A facet page's cursor carries its last value and label: up to 300 characters of a Work title, each
# up to 6 bytes as JSON, in base64.
MAX_FACET_CURSOR = 4096


class FacetValuesRequest(WireModel):
    """Every value of one facet, page by page: what `Facets` cuts at its 100 largest."""

    organization_id: UUID
    facet: FacetName
    q: Query | None = Field(
        default=None, description="Count only the documents with at least one of its words; absent = all."
    )
    filters: FeedFilters = Field(default_factory=FeedFilters)
    limit: int = Field(default=100, ge=1, le=MAX_FACET_PAGE, description="Page size.")
    cursor: str | None = Field(
        default=None, max_length=MAX_FACET_CURSOR, description="Opaque cursor from a previous page."
    )


class FacetPage(WireModel):
    facet: FacetName
    values: list[FacetValue] = Field(
        description="Largest count first (ties by the label shown, then value); no zero counts."
    )
    next_cursor: str | None = Field(default=None, description="Cursor for the next page; absent from the last page.")


class StatsRequest(WireModel):
    organization_id: UUID


class Stats(WireModel):
    documents_indexed: int = Field(ge=0, description="Documents, notes and uploads that can be found.")
    documents_failed: int = Field(default=0, ge=0, description="Uploads whose file could not be read.")
    concepts_synthesized: int = Field(ge=0)
    works_covered: int = Field(ge=0)
    memory_entries: int = Field(ge=0)
    documents_lexical_only: int = Field(
        default=0,
        ge=0,
        description="Of `documentsIndexed`, those with a passage not embedded (yet): found by their words only, "
        "until the indexer's backfill embeds them (the embedder was down or refused the text, or the model "
        "changed; with no embedder, every document).",
    )
    memory_entries_lexical_only: int = Field(
        default=0, ge=0, description="Of `memoryEntries`, those not embedded (yet): recalled by their words only."
    )
    last_indexed_at: datetime | None = None


class ItemRequest(WireModel):
    organization_id: UUID
    document_id: UUID


class Ref(WireModel):
    id: UUID
    title: str


class UploadRef(WireModel):
    id: UUID
    filename: str
    media_type: str
    size_bytes: int


class Provenance(WireModel):
    work: Ref | None = None
    mission: Ref | None = None
    teams: list[Ref] = Field(default_factory=list)
    upload: UploadRef | None = None
    agent_id: str | None = None
    agent_run_id: str | None = None


class ItemDetail(WireModel):
    item: MemoryItem
    body: str = Field(description="The full text.")
    status: str
    tags: list[str]
    version: int
    provenance: Provenance
    cites: list[Ref] = Field(description="Documents this one cites (in this organization).")
    cited_by: list[Ref] = Field(description="Documents that cite this one.")
    failure_reason: str | None = Field(
        default=None, description="Why the document's file could not be indexed (status `failed`), e.g. `encrypted: …`."
    )
    embedded: bool = Field(
        description="Whether every passage carries an embedding. False: found by its words only until the "
        "indexer's backfill embeds it (see `documentsLexicalOnly` in the stats).",
    )


class RpcError(WireModel):
    status: int = Field(description="HTTP-like status: 400 bad request, 404 not found, 500 server fault.")
    title: str = Field(description="Short summary.")
    detail: str = Field(description="What went wrong.")


Result = TypeVar("Result", FeedPage, Facets, FacetPage, Stats, ItemDetail, Recalled, AgentMemories)


class Reply(WireModel, Generic[Result]):
    """Exactly one of `result` and `error` is set."""

    result: Result | None = None
    error: RpcError | None = None


FeedReply = Reply[FeedPage]
FacetsReply = Reply[Facets]
FacetPageReply = Reply[FacetPage]
StatsReply = Reply[Stats]
ItemReply = Reply[ItemDetail]
RecallReply = Reply[Recalled]
AgentMemoriesReply = Reply[AgentMemories]
