"""The aggregator's composition root: settings, engine, NATS, query embedder, RPC subscriptions."""

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field

from cortex_aggregator.agent_memories import list_agent_memories
from cortex_aggregator.cursor import CursorCodec
from cortex_aggregator.detail import item_detail
from cortex_aggregator.facet_indexes import FacetIndexes
from cortex_aggregator.facets import facet_values, facets
from cortex_aggregator.feed import FeedConfig, FeedContext, feed
from cortex_aggregator.handlers import reply_too_large, rpc_handler
from cortex_aggregator.lexical_indexes import LexicalIndexes
from cortex_aggregator.query_embedding import QueryEmbedding
from cortex_aggregator.recall import RecallContext, recall
from cortex_aggregator.rerank import OrgRerankers
from cortex_aggregator.settings import AggregatorSettings
from cortex_aggregator.stats import stats
from cortex_contracts import memory
from cortex_contracts import rpc as models
from cortex_contracts.subjects import (
    RPC_AGGREGATOR_AGENT_MEMORIES,
    RPC_AGGREGATOR_FACET_VALUES,
    RPC_AGGREGATOR_FACETS,
    RPC_AGGREGATOR_FEED,
    RPC_AGGREGATOR_ITEM,
    RPC_AGGREGATOR_RECALL,
    RPC_AGGREGATOR_STATS,
)
from cortex_contracts.vector_store import VectorStore
from cortex_embedding import openai_compatible
from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.errors import EmbedderNotConfigured, EmbedderSettingsInvalid
from cortex_embedding.local_model import load_local_embedder
from cortex_memory_plugins.mem0 import Mem0Memory, Mem0Settings
from cortex_messaging import rpc
from cortex_messaging.connection import StoppedBeforeConnected, connect, disconnect
from cortex_plugins.registry import PluginRegistry
from cortex_store.database import make_engine, make_sessionmaker
from cortex_store.org_reads import make_read_pool
from cortex_supervision.service_run import CannotStart, settings_or_exit
from cortex_telemetry.heap import freeze_startup_heap
from cortex_vector_stores.binding import store_of_its_own

log = logging.getLogger(__name__)

QUEUE_GROUP = "aggregator"
APPLICATION_NAME = "cortex-aggregator"  # how its connections show in pg_stat_activity


@dataclass
class Aggregator:
    settings: AggregatorSettings
    embedder: BatchingEmbedder | None = None
    agent_memory: list[memory.AgentMemoryReader] = field(default_factory=list)  # external `memory` readers
    vectors: VectorStore | None = None  # a vector store of its own (Qdrant); None: pgvector
    rerankers: OrgRerankers | None = None  # each organization's reranker; None: searches are not reranked
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    lost: bool = False  # stopped because its NATS client closed for good: to be restarted

    def nats_lost(self) -> None:
        """Stop: a closed client answers no request again (cortex_messaging.connection)."""
        self.lost = True
        self.stop.set()

    async def run(self) -> None:
        settings = self.settings
        # Prepared statements must not fall back to a generic plan that ignores the filter values:
        # measured by bench/feed, a generic feed plan walked the whole recency index (38 ms vs 7 ms).
        # Parallel workers only add overhead when concurrent requests already use every core.
        server_settings = {
            "application_name": APPLICATION_NAME,
            "plan_cache_mode": "force_custom_plan",
            "max_parallel_workers_per_gather": "0",
        }
        engine = make_engine(
            settings.database_url,
            pool_size=settings.pool_size,
            server_settings=server_settings,
            pre_ping=False,  # every request is a read, tried again on a fresh connection (handlers.py)
        )
        # Searches run on asyncpg's own pool (org_reads): ~0.7 ms less CPU a search than a session.
        search_pool = await make_read_pool(
            settings.database_url, size=settings.pool_size, server_settings=server_settings
        )
        try:
            nc = await connect(settings.nats_url, name="cortex-aggregator", on_lost=self.nats_lost, stop=self.stop)
        except StoppedBeforeConnected as exc:  # told to stop while NATS was not up yet: nothing to finish
            log.info("%s", exc)
            await search_pool.close()
            await engine.dispose()
            return
        try:
            sessions = make_sessionmaker(engine)
            indexes = FacetIndexes(sessions, settings.facet_index_max_organizations)
            query = (
                QueryEmbedding(sessions, self.embedder, settings.embedding_space_refresh_seconds)
                if self.embedder
                else None
            )
            ctx = FeedContext(
                reads=search_pool,
                cursors=CursorCodec(settings.secret.get_secret_value().encode()),
                embed_query=query.embed if query else None,
                config=FeedConfig(
                    rrf_k=settings.rrf_k,
                    lexical_weight=settings.lexical_weight,
                    dense_weight=settings.dense_weight,
                    exact_scan_max_chunks=settings.exact_scan_max_chunks,
                    dense_min_similarity=settings.dense_min_similarity,
                ),
                indexes=indexes,
                vectors=self.vectors,
                rerankers=self.rerankers,
                lexical=LexicalIndexes(
                    sessions,
                    settings.lexical_index_max_organizations,
                    max_bytes=settings.lexical_index_max_megabytes * 10**6,
                )
                if settings.lexical_index_max_organizations
                else None,
            )
            recall_ctx = RecallContext(
                sessions=sessions,
                embed_query=ctx.embed_query,
                lexical_share=settings.recall_lexical_share,
                external=self.agent_memory,
                max_reply_bytes=nc.max_payload,
            )
            handlers = {
                RPC_AGGREGATOR_FEED: rpc_handler(
                    models.FeedRequest,
                    models.FeedReply,
                    query.guard(feed, ctx, dataclasses.replace(ctx, embed_query=None))
                    if query
                    else lambda r: feed(ctx, r),
                ),
                RPC_AGGREGATOR_FACETS: rpc_handler(
                    models.FacetsRequest,
                    models.FacetsReply,
                    lambda r: facets(indexes, ctx.lexical, r),
                ),
                RPC_AGGREGATOR_FACET_VALUES: rpc_handler(
                    models.FacetValuesRequest,
                    models.FacetPageReply,
                    lambda r: facet_values(indexes, ctx.lexical, ctx.cursors, r),
                ),
                RPC_AGGREGATOR_STATS: rpc_handler(models.StatsRequest, models.StatsReply, lambda r: stats(sessions, r)),
                RPC_AGGREGATOR_ITEM: rpc_handler(
                    models.ItemRequest,
                    models.ItemReply,
                    lambda r: item_detail(sessions, r),
                ),
            }
            handlers[RPC_AGGREGATOR_RECALL] = rpc_handler(
                memory.RecallRequest,
                models.RecallReply,
                query.guard(recall, recall_ctx, dataclasses.replace(recall_ctx, embed_query=None))
                if query
                else lambda r: recall(recall_ctx, r),
            )
            handlers[RPC_AGGREGATOR_AGENT_MEMORIES] = rpc_handler(
                memory.AgentMemoriesRequest,
                models.AgentMemoriesReply,
                lambda r: list_agent_memories(self.agent_memory, r),
            )
            for subject, handler in handlers.items():
                await rpc.serve(nc, subject, QUEUE_GROUP, handler, oversized=reply_too_large)
            log.info("answering %s", ", ".join(handlers))
            freeze_startup_heap()
            self.ready.set()
            await self.stop.wait()
        finally:
            await disconnect(nc)
            if self.embedder:
                await self.embedder.close()
            for reader in self.agent_memory:
                await reader.aclose()
            if self.vectors:
                await self.vectors.close()
            if self.rerankers:
                await self.rerankers.aclose()
            await search_pool.close()
            await engine.dispose()


def build(settings: AggregatorSettings | None = None) -> Aggregator:
    settings = settings or AggregatorSettings()  # filled from the environment
    registry = PluginRegistry.from_environment()
    if refusals := registry.pin_refusals():
        raise CannotStart("; ".join(refusals))
    choice = registry.pin("embedder") or settings.embedder  # CORTEX_PLUGIN_EMBEDDER wins
    embedder = None
    if choice == "local":
        model = load_local_embedder(threads=settings.embedding_threads, int8=settings.query_model_int8)
        embedder = BatchingEmbedder(model) if model else None
    elif choice == "openai":
        # The indexer's endpoint settings (CORTEX_EMBEDDER_OPENAI_*), but a search waits for one short try.
        try:
            configured = openai_compatible.settings_from_environment()
        except (EmbedderNotConfigured, EmbedderSettingsInvalid) as exc:
            raise CannotStart(str(exc)) from exc
        endpoint = configured.model_copy(
            update={"timeout_seconds": settings.query_embedding_timeout_seconds, "max_retries": 0}
        )
        embedder = BatchingEmbedder(openai_compatible.OpenAICompatibleEmbedder(endpoint))
    if embedder is None:
        log.warning("no query embedder: search is lexical-only")
    # mem0 reads through alongside the built-in memory whenever CORTEX_MEM0_URL is set.
    mem0 = settings_or_exit(Mem0Settings, "cortex-aggregator")  # a bad CORTEX_MEM0_* value: one line, exit 2
    agent_memory: list[memory.AgentMemoryReader] = [Mem0Memory(mem0)] if mem0.url else []
    return Aggregator(
        settings=settings,
        embedder=embedder,
        agent_memory=agent_memory,
        vectors=store_of_its_own(registry.active("vector_store")),
        rerankers=OrgRerankers(
            registry, candidates=settings.rerank_candidates, timeout_seconds=settings.rerank_timeout_seconds
        ),
    )
