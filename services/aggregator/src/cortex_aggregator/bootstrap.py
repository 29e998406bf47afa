"""The aggregator's composition root: settings, engine, NATS, query embedder, RPC subscriptions."""

import asyncio
import logging
from dataclasses import dataclass, field

from cortex_aggregator.cursor import CursorCodec
from cortex_aggregator.detail import item_detail
from cortex_aggregator.facets import facets
from cortex_aggregator.feed import FeedConfig, FeedContext, feed
from cortex_aggregator.handlers import rpc_handler
from cortex_aggregator.recall import RecallContext, entry_exists, recall
from cortex_aggregator.settings import AggregatorSettings
from cortex_aggregator.stats import stats
from cortex_contracts import memory
from cortex_contracts import rpc as models
from cortex_contracts.subjects import (
    RPC_AGGREGATOR_ENTRY,
    RPC_AGGREGATOR_FACETS,
    RPC_AGGREGATOR_FEED,
    RPC_AGGREGATOR_ITEM,
    RPC_AGGREGATOR_RECALL,
    RPC_AGGREGATOR_STATS,
)
from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.local_model import load_local_embedder
from cortex_messaging import rpc
from cortex_messaging.connection import connect
from cortex_store.database import make_engine, make_sessionmaker

log = logging.getLogger(__name__)

QUEUE_GROUP = "aggregator"


@dataclass
class Aggregator:
    settings: AggregatorSettings
    embedder: BatchingEmbedder | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def _embed_query(self, q: str) -> list[float]:
        assert self.embedder is not None
        return (await self.embedder.embed([q]))[0]

    async def run(self) -> None:
        settings = self.settings
        # Prepared statements must not fall back to a generic plan that ignores the filter values:
        # measured by bench/feed, a generic feed plan walked the whole recency index (38 ms vs 7 ms).
        engine = make_engine(
            settings.database_url,
            pool_size=settings.pool_size,
            server_settings={"plan_cache_mode": "force_custom_plan"},
        )
        nc = await connect(settings.nats_url, name="cortex-aggregator")
        try:
            sessions = make_sessionmaker(engine)
            ctx = FeedContext(
                sessions=sessions,
                cursors=CursorCodec(settings.secret.get_secret_value().encode()),
                embed_query=self._embed_query if self.embedder else None,
                config=FeedConfig(
                    rrf_k=settings.rrf_k,
                    lexical_weight=settings.lexical_weight,
                    dense_weight=settings.dense_weight,
                    exact_scan_max_chunks=settings.exact_scan_max_chunks,
                ),
            )
            recall_ctx = RecallContext(sessions=sessions, embed_query=ctx.embed_query, rrf_k=settings.rrf_k)
            handlers = {
                RPC_AGGREGATOR_FEED: rpc_handler(models.FeedRequest, models.FeedReply, lambda r: feed(ctx, r)),
                RPC_AGGREGATOR_FACETS: rpc_handler(
                    models.FacetsRequest,
                    models.FacetsReply,
                    lambda r: facets(sessions, r),
                ),
                RPC_AGGREGATOR_STATS: rpc_handler(models.StatsRequest, models.StatsReply, lambda r: stats(sessions, r)),
                RPC_AGGREGATOR_ITEM: rpc_handler(
                    models.ItemRequest,
                    models.ItemReply,
                    lambda r: item_detail(sessions, r),
                ),
            }
            handlers[RPC_AGGREGATOR_RECALL] = rpc_handler(
                memory.RecallRequest, models.RecallReply, lambda r: recall(recall_ctx, r)
            )
            handlers[RPC_AGGREGATOR_ENTRY] = rpc_handler(
                memory.EntryLookup, models.EntryReply, lambda r: entry_exists(sessions, r)
            )
            for subject, handler in handlers.items():
                await rpc.serve(nc, subject, QUEUE_GROUP, handler)
            log.info("answering %s", ", ".join(handlers))
            self.ready.set()
            await self.stop.wait()
        finally:
            await nc.drain()
            if self.embedder:
                await self.embedder.close()
            await engine.dispose()


def build(settings: AggregatorSettings | None = None) -> Aggregator:
    settings = settings or AggregatorSettings()  # filled from the environment
    embedder = None
    if settings.embedder == "local":
        model = load_local_embedder(threads=settings.embedding_threads)
        embedder = BatchingEmbedder(model) if model else None
    if embedder is None:
        log.warning("no query embedder: search is lexical-only")
    return Aggregator(settings=settings, embedder=embedder)
