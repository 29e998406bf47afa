"""The org feed: hybrid search when there is a query, most recently updated first when there is not."""

import uuid
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from cortex_aggregator import items, retrieval
from cortex_aggregator.corpus_stats import CorpusStats
from cortex_aggregator.cursor import BadCursor, CursorCodec, filter_sets, query_key
from cortex_aggregator.dense_plan import DensePlan
from cortex_aggregator.facet_index import Key, from_micros, to_micros
from cortex_aggregator.facet_indexes import FacetIndexes
from cortex_aggregator.filters import DocumentFilter, document_filter
from cortex_aggregator.fusion import reciprocal_rank_fusion
from cortex_aggregator.lexical_indexes import LexicalIndexes
from cortex_aggregator.query_vector import EmbedQuery, QueryVector, abandoned_if_unused, resolved, start_embedding
from cortex_aggregator.rerank import OrgRerankers, passage_text
from cortex_aggregator.store_dense import store_dense_hits
from cortex_contracts.memory_item import MemoryItem
from cortex_contracts.rpc import FeedPage, FeedRequest, RetrievalMode, Sort
from cortex_contracts.vector_store import VectorStore
from cortex_store.database import driver_connection
from cortex_store.org_reads import OrgReads, org_reads

# Each leg's depth: bench.quality's CISI hybrid nDCG@10: 0.4445 at 50, 0.4428 at 100; at 50 the HNSW walk
# is half as wide (bench.search at 10k: PostgreSQL ~5 ms a search, ~6.7 at 100). A search's first page sets
# it (deeper for a page of more than 50) and its cursor carries it: every page is a slice of one ranking.
# Fusion over legs cut at another depth is another ranking, so pages that each went as deep as they needed
# repeated some documents and skipped others (QA 30).
CANDIDATES_PER_LEG = 50
MAX_DEPTH = 1000  # what a signed cursor may carry: more than any first page sets


@dataclass(frozen=True)
class FeedConfig:
    rrf_k: int = 60
    lexical_weight: float = 1.0
    dense_weight: float = 1.0
    exact_scan_max_chunks: int = 5_000
    dense_min_similarity: float = 0.3


@dataclass(frozen=True)
class FeedContext:
    reads: Any  # asyncpg pool (org_reads.make_read_pool): a search's transaction
    cursors: CursorCodec
    embed_query: EmbedQuery | None
    config: FeedConfig
    indexes: FacetIndexes  # the feed without `q` reads the facet index
    vectors: VectorStore | None = None  # a vector store of its own (Qdrant); None: pgvector, in the same SQL
    dense_plan: DensePlan = field(default_factory=DensePlan)
    corpus_stats: CorpusStats = field(default_factory=CorpusStats)
    lexical: LexicalIndexes | None = None  # BM25 in memory for searches without filters; None: in SQL
    rerankers: OrgRerankers | None = None  # None: no search is reranked


@dataclass(frozen=True)
class Legs:
    lexical: list[retrieval.Hit]
    dense: list[retrieval.Hit]
    weights: dict[str, float]  # query word -> BM25 weight, to pick the passage of a lexical hit without one


def _query_key(request: FeedRequest) -> str:
    """A cursor is only valid for a request with the pages it was made for: the org, the filters, and with a
    query, the query, the sort and the mode (without one, the newest come first whatever they say)."""
    parts: dict[str, object] = {"org": request.organization_id, "filters": filter_sets(request.filters)}
    if request.q:
        parts |= {"q": request.q, "sort": request.sort or Sort.RELEVANCE, "mode": request.mode}
    return query_key(parts)


def _cursor_state(ctx: FeedContext, request: FeedRequest) -> dict[str, object] | None:
    return None if request.cursor is None else ctx.cursors.decode_for(request.cursor, _query_key(request))


def _search_transaction(pool: Any, org: uuid.UUID, where: DocumentFilter) -> AbstractAsyncContextManager[OrgReads]:
    """A transaction bound to the organization, begun in one round trip with its plan settings.

    The service forces custom plans: filtered SQL needs plans made for its filter values (bootstrap.py).
    An unfiltered search's statements plan as well generically (bench/search's EXPLAINs: custom and generic
    alike), and planning them on every search cost ~2 ms of PostgreSQL: they reuse a generic plan. Forced:
    left to choose ('auto'), PostgreSQL kept planning the BM25 refresh (~0.7 ms) and the HNSW walk, whose
    generic plans it estimates dearer than their custom ones (in situ at 10k: 0.9 -> 0.2 ms and 1.5 -> 1.1).
    The first page's walk settings (`ann_graph`) come with them: harmless when the dense leg does not walk
    (no statement of a search sorts by choice)."""
    if where.active:
        return org_reads(pool, org)
    return org_reads(pool, org, generic_plans=True, walk_ef=retrieval.HNSW_EF_SEARCH)


async def feed(ctx: FeedContext, request: FeedRequest) -> FeedPage:
    state = _cursor_state(ctx, request)
    where = document_filter(request.filters)
    if request.q:
        return await _search(ctx, request, where, state)
    return await _recent(ctx, request, state)


async def _recent(ctx: FeedContext, request: FeedRequest, state: dict[str, object] | None) -> FeedPage:
    """Newest first: the facet index picks the page (keyset-paged on (updated_at, id): no item twice, and
    none missed but one edited meanwhile, which moves ahead of the pages already seen); only the page's rows
    are read, in the snapshot the index was brought to."""
    after: Key | None = None
    if state is not None:
        try:  # (a time without a zone cannot be subtracted from the epoch: TypeError)
            after = Key(to_micros(datetime.fromisoformat(str(state["u"]))), uuid.UUID(str(state["i"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise BadCursor("cursor is not valid") from exc
    org = request.organization_id

    async def page_rows(session: AsyncSession, keys: Sequence[Key]) -> dict[uuid.UUID, Any]:
        return await items.rows_by_id(await driver_connection(session), org, [key.id for key in keys[: request.limit]])

    keys, rows = await ctx.indexes.read(
        org, lambda index: index.newest(request.filters, after, request.limit + 1), page_rows
    )
    page = [
        items.to_item(rows[key.id], items.shorten(rows[key.id].body_head))
        for key in keys[: request.limit]
        if key.id in rows
    ]
    next_cursor = None
    if len(keys) > request.limit:
        last = keys[request.limit - 1]
        state = {"k": _query_key(request), "u": from_micros(last.updated).isoformat(), "i": str(last.id)}
        next_cursor = ctx.cursors.encode(state)
    return FeedPage(items=page, next_cursor=next_cursor)


async def _dense_leg(
    ctx: FeedContext,
    reads: OrgReads,
    org: uuid.UUID,
    vector: list[float] | None,
    where: DocumentFilter,
    depth: int,
) -> list[retrieval.Hit]:
    if vector is None:
        return []
    if ctx.vectors is not None:
        return await store_dense_hits(reads, ctx.vectors, org, vector, where, depth)
    return await retrieval.dense_hits(reads, org, vector, where, depth, exact=await _exact(ctx, reads, org, where))


async def _exact(ctx: FeedContext, reads: OrgReads, org: uuid.UUID, where: DocumentFilter) -> bool:
    async def walks() -> bool:
        return await retrieval.walks_graph(reads, org, where, ctx.config.exact_scan_max_chunks)

    return await ctx.dense_plan.exact(org, where, walks)


async def _legs(
    ctx: FeedContext,
    reads: OrgReads,
    request: FeedRequest,
    where: DocumentFilter,
    query_vector: QueryVector | None,
    depth: int,
) -> Legs:
    """(lexical, dense) hits: BM25 from memory when the organization's index is loaded and nothing is
    filtered, else in SQL; in one statement with the dense leg when both run in PostgreSQL.

    `query_vector` is being embedded meanwhile, in the model's thread: the in-memory lexical leg runs
    before it is awaited."""
    assert request.q is not None
    org, q = request.organization_id, request.q
    # never fail for want of an embedder
    want_lexical = request.mode is not RetrievalMode.SEMANTIC or query_vector is None
    if want_lexical and ctx.lexical is not None and not where.active:
        ranked = await ctx.lexical.rank(reads.connection, org, q, depth, retrieval.BM25_K1, retrieval.BM25_B)
        if ranked is not None:
            lexical = [retrieval.Hit(doc, None, score) for doc, score in zip(ranked.ids, ranked.scores, strict=True)]
            dense = await _dense_leg(ctx, reads, org, await resolved(query_vector), where, depth)
            return Legs(lexical, dense, ranked.weights)
    vector = await resolved(query_vector)
    corpus = await ctx.corpus_stats.of(reads, org) if want_lexical else None
    if corpus is None:
        return Legs([], await _dense_leg(ctx, reads, org, vector, where, depth), {})
    if vector is None or ctx.vectors is not None:
        lexical = await retrieval.lexical_hits(reads, org, q, where, depth, corpus)
        return Legs(lexical, await _dense_leg(ctx, reads, org, vector, where, depth), {})
    exact = await _exact(ctx, reads, org, where)
    lexical, dense = await retrieval.hybrid_hits(reads, org, q, vector, where, depth, corpus, exact=exact)
    return Legs(lexical, dense, {})


async def _search(
    ctx: FeedContext,
    request: FeedRequest,
    where: DocumentFilter,
    state: dict[str, object] | None,
) -> FeedPage:
    assert request.q is not None
    offset = state.get("o", 0) if state else 0
    if not isinstance(offset, int):
        raise BadCursor("cursor is not valid")
    depth = state.get("d", offset + request.limit + 1) if state else request.limit + 1  # "d": since QA 30
    if not isinstance(depth, int) or not 0 <= offset <= 2 * depth <= 2 * MAX_DEPTH:
        raise BadCursor("cursor is not valid")
    depth = max(CANDIDATES_PER_LEG, depth)
    use_dense = ctx.embed_query is not None and request.mode is not RetrievalMode.LEXICAL
    query_vector = start_embedding(ctx.embed_query if use_dense else None, request.q)
    with abandoned_if_unused(query_vector):
        return await _ranked_page(ctx, request, where, query_vector, depth, offset)


async def _ranked_page(
    ctx: FeedContext,
    request: FeedRequest,
    where: DocumentFilter,
    query_vector: QueryVector | None,
    depth: int,
    offset: int,
) -> FeedPage:
    org, config = request.organization_id, ctx.config
    rerankers, reranking = ctx.rerankers, None
    async with _search_transaction(ctx.reads, org, where) as reads:
        # A page beyond the reranked head keeps its order: the head's new order does not reach it.
        if rerankers is not None and request.sort is not Sort.UPDATED and offset < rerankers.candidates:
            reranking = await rerankers.of(reads, org)
        legs = await _legs(ctx, reads, request, where, query_vector, depth)
        # The nearest passages are near only by rank when nothing is about the query: without a floor, a
        # search for a word no document has answered the whole organization, and sorted by date buried
        # the documents that have the word under the newest unrelated ones (QA 47).
        lexical, dense = legs.lexical, [hit for hit in legs.dense if hit.score >= config.dense_min_similarity]
        fused = reciprocal_rank_fusion(
            [
                ([hit.document_id for hit in lexical], config.lexical_weight),
                ([hit.document_id for hit in dense], config.dense_weight),
            ],
            k=config.rrf_k,
        )
        best_chunk = {hit.document_id: hit.chunk_id for hit in [*reversed(dense), *reversed(lexical)]}
        if request.sort is Sort.UPDATED:
            rows = await items.rows_by_id(reads.connection, org, [doc for doc, _ in fused])
            scores = dict(fused)
            ordered = sorted(rows.values(), key=lambda row: (row.updated_at, row.id), reverse=True)
            fused = [(row.id, scores[row.id]) for row in ordered]
        head = fused[: reranking.candidates] if reranking else []
        # The head's rows, to rerank it, and the page's, wherever the head's new order puts it.
        wanted = fused[: max(len(head), offset + request.limit)] if head else fused[offset : offset + request.limit]
        picks = [(doc, best_chunk[doc]) for doc, _ in wanted]
        rows = await items.rows_with_passages(reads.connection, org, picks, legs.weights)
    if reranking and head:  # outside the transaction: it may take a while
        texts = [passage_text(rows.get(doc)) for doc, _ in head]
        fused = await reranking.reorder(request.q or "", head, texts) + fused[len(head) :]
    window = fused[offset : offset + request.limit]
    starts = items.word_starts(request.q, legs.weights)
    page: list[MemoryItem] = [
        items.to_item(rows[doc], _snippet(rows[doc], starts), score) for doc, score in window if doc in rows
    ]
    has_more = len(fused) > offset + request.limit
    next_state = {"k": _query_key(request), "o": offset + request.limit, "d": depth}
    next_cursor = ctx.cursors.encode(next_state) if has_more else None
    return FeedPage(items=page, next_cursor=next_cursor)


def _snippet(row: Any, word_starts: list[str]) -> str:
    """The passage the legs matched, around the query's words; the start of the body when that passage is
    gone: the document was re-indexed between the legs and the page's rows, whose one statement gives its
    new title and body."""
    return items.shorten(row.passage or row.body_head or "", around=word_starts)
