"""The aggregator's composition root: settings, engine, NATS, query embedder, RPC subscriptions."""

import asyncio
import logging
from dataclasses import dataclass, field

from cortex_aggregator.cursor import CursorCodec
from cortex_aggregator.feed import FeedConfig, FeedContext
from cortex_aggregator.handlers import make_feed_handler
from cortex_aggregator.settings import AggregatorSettings
from cortex_contracts.subjects import RPC_AGGREGATOR_FEED
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
        engine = make_engine(settings.database_url, pool_size=settings.pool_size)
        nc = await connect(settings.nats_url, name="cortex-aggregator")
        try:
            ctx = FeedContext(
                sessions=make_sessionmaker(engine),
                cursors=CursorCodec(settings.secret.get_secret_value().encode()),
                embed_query=self._embed_query if self.embedder else None,
                config=FeedConfig(
                    rrf_k=settings.rrf_k,
                    lexical_weight=settings.lexical_weight,
                    dense_weight=settings.dense_weight,
                    exact_scan_max_chunks=settings.exact_scan_max_chunks,
                ),
            )
            await rpc.serve(nc, RPC_AGGREGATOR_FEED, QUEUE_GROUP, make_feed_handler(ctx))
            log.info("answering %s", RPC_AGGREGATOR_FEED)
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
        model = load_local_embedder()
        embedder = BatchingEmbedder(model) if model else None
    if embedder is None:
        log.warning("no query embedder: search is lexical-only")
    return Aggregator(settings=settings, embedder=embedder)
