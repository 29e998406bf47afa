"""The indexer's composition root: settings, engine, NATS, embedder, consumer. Nothing at import time."""

import asyncio
import logging
from dataclasses import dataclass, field

from nats.errors import ConnectionClosedError

from cortex_contracts.subjects import CATALOG_ALL, KB_ALL, MEMORY_ALL, STREAM_KB, STREAM_MEMORY
from cortex_contracts.vector_store import VectorStore
from cortex_embedding import openai_compatible
from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.errors import EmbedderNotConfigured, EmbedderSettingsInvalid
from cortex_embedding.local_model import load_local_embedder
from cortex_indexer import embedding_space
from cortex_indexer.ann_admission import AnnAdmission
from cortex_indexer.backfill import Backfill
from cortex_indexer.catalog_handler import make_catalog_handler
from cortex_indexer.cpus import usable_cpus
from cortex_indexer.embedding_space import EmbeddingSpace
from cortex_indexer.extraction_workers import ExtractionWorkers
from cortex_indexer.handlers import make_kb_handler
from cortex_indexer.indexing import IndexingContext
from cortex_indexer.memory_entries import make_memory_handler
from cortex_indexer.outbox import OutboxRelay
from cortex_indexer.refused_texts import RefusedTexts
from cortex_indexer.settings import IndexerSettings
from cortex_messaging.connection import StoppedBeforeConnected, connect, disconnect
from cortex_messaging.consumer import ConsumerSpec, DurableConsumer
from cortex_messaging.streams import ensure_streams
from cortex_plugins.registry import PluginRegistry
from cortex_store.database import make_engine, make_sessionmaker, open_pool, unreachable
from cortex_supervision.service_run import CannotStart
from cortex_telemetry.heap import freeze_startup_heap
from cortex_vector_stores.binding import store_of_its_own

log = logging.getLogger(__name__)

CONSUMER = "indexer-kb"
CATALOG_CONSUMER = "indexer-catalog"
MEMORY_CONSUMER = "indexer-memory"


@dataclass
class Indexer:
    settings: IndexerSettings
    embedder: BatchingEmbedder | None = None
    vectors: VectorStore | None = None  # a vector store of its own (Qdrant); None: pgvector, the chunks' own rows
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    lost: bool = False  # stopped because its NATS client closed for good: to be restarted

    def nats_lost(self) -> None:
        """Stop: a closed client neither consumes nor publishes again (cortex_messaging.connection)."""
        self.lost = True
        self.stop.set()

    async def run(self) -> None:
        """Consume until `stop` is set; then finish what is in flight and close everything."""
        settings = self.settings
        # Handlers hold a connection only around their short transactions, not while they wait for the embedder.
        # No ping on checkout (three round trips): a statement failing on a connection the server closed
        # fails its event, which the consumer retries. No overflow: under a steady stream of events,
        # connections opened beyond the pool were closed and opened again (115 new server processes while
        # bench/ingest indexed 300 documents); handlers wait for a pooled one instead.
        pool_size = min(settings.concurrency, settings.database_connections)
        engine = make_engine(settings.database_url, pool_size=pool_size, max_overflow=0, pre_ping=False)
        try:
            nc = await connect(settings.nats_url, name="cortex-indexer", on_lost=self.nats_lost, stop=self.stop)
        except StoppedBeforeConnected as exc:  # told to stop while NATS was not up yet: nothing to finish
            log.info("%s", exc)
            await engine.dispose()
            return
        extraction = ExtractionWorkers(settings.extraction_workers, settings.extraction_timeout_seconds)
        try:
            await open_pool(engine, pool_size)
            js = nc.jetstream()
            await ensure_streams(js)
            sessions = make_sessionmaker(engine)
            space = EmbeddingSpace.of(self.embedder) if self.embedder else None
            await extraction.start()
            background = []
            if self.embedder and space:
                # Before consuming: a changed model is switched to (a re-embed job) before anything is embedded.
                # With the endpoint down and no configured dimension this waits for the backfill's next pass.
                await embedding_space.adopt(sessions, self.embedder, space)
                backfill = Backfill(
                    sessions,
                    self.embedder,
                    space,
                    batch=settings.backfill_batch,
                    interval_seconds=settings.backfill_interval_seconds,
                    vectors=self.vectors,
                    refused_chunks=RefusedTexts(settings.backfill_refused_retry_seconds),
                    refused_entries=RefusedTexts(settings.backfill_refused_retry_seconds),
                )
                background.append(backfill.run(self.stop))
            if self.embedder and self.vectors is None:  # vectors in kb_chunks, under pgvector's HNSW index
                admission = AnnAdmission(sessions, settings.ann_min_chunks, settings.ann_admission_interval_seconds)
                background.append(admission.run(self.stop))
            relay = OutboxRelay(sessions, js)
            ctx = IndexingContext(
                sessions=sessions,
                embed=self.embedder.embed if self.embedder else None,
                consumer=CONSUMER,
                space=space,
                vectors=self.vectors,
                relay=relay,
            )
            catalog_ctx = IndexingContext(sessions=sessions, embed=None, consumer=CATALOG_CONSUMER)
            memory_ctx = IndexingContext(sessions=sessions, embed=ctx.embed, consumer=MEMORY_CONSUMER, space=space)
            memory = ConsumerSpec(
                stream=STREAM_MEMORY,
                durable=MEMORY_CONSUMER,
                filter_subjects=(MEMORY_ALL,),
                max_deliver=settings.max_deliver,
                unavailable=unreachable,  # a database outage holds events, not counted against them
                concurrency=settings.concurrency,
                batch=settings.concurrency * 2,
            )
            documents = ConsumerSpec(
                stream=STREAM_KB,
                durable=CONSUMER,
                filter_subjects=(KB_ALL,),
                max_deliver=settings.max_deliver,
                unavailable=unreachable,  # a database outage holds events, not counted against them
                concurrency=settings.concurrency,
                batch=settings.concurrency * 2,
            )
            catalog = ConsumerSpec(
                stream=STREAM_KB,
                durable=CATALOG_CONSUMER,
                filter_subjects=(CATALOG_ALL,),
                max_deliver=settings.max_deliver,
                unavailable=unreachable,  # a database outage holds events, not counted against them
                concurrency=4,
            )
            freeze_startup_heap()  # the model, plugins and pools: the collector's full passes no longer walk them
            await asyncio.gather(
                *background,
                relay.sweep(self.stop),
                DurableConsumer(js, documents, make_kb_handler(ctx, js, extraction)).run(self.stop),
                DurableConsumer(js, catalog, make_catalog_handler(catalog_ctx)).run(self.stop),
                DurableConsumer(js, memory, make_memory_handler(memory_ctx)).run(self.stop),
            )
            await relay.finish()
        except ConnectionClosedError:
            if not nc.is_closed:
                raise
            # Closed for good while starting (a consumer being bound, say): as lost as when consuming.
            self.lost = True
            log.warning("the NATS client closed for good while the indexer was starting; it stops to be restarted")
        finally:
            await extraction.close()
            if self.embedder:
                await self.embedder.close()
            if self.vectors:
                await self.vectors.close()
            await disconnect(nc)
            await engine.dispose()


def build_embedder(settings: IndexerSettings, pin: str | None = None) -> BatchingEmbedder | None:
    """`pin`: CORTEX_PLUGIN_EMBEDDER, which wins over CORTEX_INDEXER_EMBEDDER."""
    choice = pin or settings.embedder
    if choice == "none":
        log.warning("embedder disabled by settings: indexing lexical-only")
        return None
    if choice == "openai":
        try:
            endpoint = openai_compatible.create()
        except (EmbedderNotConfigured, EmbedderSettingsInvalid) as exc:
            raise CannotStart(str(exc)) from exc
        log.info("embedding with %s at %s", endpoint.model, endpoint.url)
        return BatchingEmbedder(endpoint, settings.embedding_max_batch, streams=settings.embedding_streams or 1)
    streams = settings.embedding_streams or usable_cpus()
    threads = settings.embedding_threads or (1 if streams > 1 else None)
    model = load_local_embedder(threads=threads)
    if model is None:
        log.warning("no local embedding model installed (extra `local-embeddings`): indexing lexical-only")
        return None
    log.info("embedding with %s (dimension %d), %d call(s) at once", model.name, model.dimension, streams)
    return BatchingEmbedder(model, settings.embedding_max_batch, streams=streams)


def build(settings: IndexerSettings | None = None) -> Indexer:
    settings = settings or IndexerSettings()  # filled from the environment
    registry = PluginRegistry.from_environment()
    if refusals := registry.pin_refusals():
        raise CannotStart("; ".join(refusals))
    return Indexer(
        settings=settings,
        embedder=build_embedder(settings, registry.pin("embedder")),
        vectors=store_of_its_own(registry.active("vector_store")),
    )
