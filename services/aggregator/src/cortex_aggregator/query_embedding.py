"""Query embedding that never compares vectors of two models, and never fails a search.

The index records the model and dimension its embeddings were made with (`embedding_space`). The dense
legs run only while the query embedder's model is that one (re-read every few seconds, so a re-embed
after a model change is noticed); otherwise, and for a while after the query embedder fails, search and
recall run lexical-only. During a re-embed the dense leg covers what is already re-embedded: chunks
still waiting have no embedding, and the dense leg only reads embedded chunks.

The last queries' vectors are kept: the next page of a search, a facet clicked beside it and an agent
recalling the same words again send the same query, and its embedding is the biggest share of the
aggregator's CPU per search (bench/search, searches sent again: 8.2 -> 4.6 ms at 1k, 11.5 -> 6.5 at 100k).
"""

import logging
import math
import time
from array import array
from collections.abc import Awaitable, Callable
from typing import TypeVar

from opentelemetry import metrics
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cortex_aggregator.expiring_lru import ExpiringLru
from cortex_contracts.vector_store import VectorStoreUnavailable
from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.embedder import model_name
from cortex_embedding.errors import EmbeddingError
from cortex_store.embedding_space import RecordedSpace, recorded_space

log = logging.getLogger(__name__)

CACHED_QUERIES = 1024  # ~3 KB each at 384 dimensions

Context = TypeVar("Context")
Request = TypeVar("Request")
Reply = TypeVar("Reply")


class SpaceMismatch(EmbeddingError):
    """The query vector is not in the index's embedding space."""


class QueryEmbedding:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        embedder: BatchingEmbedder,
        refresh_seconds: float = 5.0,
        cached_queries: int = CACHED_QUERIES,
    ) -> None:
        self._sessions = sessions
        self._embedder = embedder
        self.model = model_name(embedder.embedder)
        self._refresh_seconds = refresh_seconds
        self._recorded: RecordedSpace | None = None
        self._read_at = float("-inf")
        self._failed_at = float("-inf")
        # query text -> its vector (doubles: exactly what the embedder gave; an array, which the collector skips)
        self._vectors: ExpiringLru[str, array[float]] = ExpiringLru(math.inf, cached_queries)
        self._embedded = metrics.get_meter("cortex_aggregator").create_counter(
            "cortex.aggregator.query_vectors", description="Query vectors a search or recall used, by `cached`"
        )

    async def recorded(self) -> RecordedSpace | None:
        now = time.monotonic()
        if now - self._read_at >= self._refresh_seconds:
            async with self._sessions() as session:
                recorded = await recorded_space(session)
            if recorded != self._recorded:
                self._tell(recorded)
            self._recorded, self._read_at = recorded, now
        return self._recorded

    def _tell(self, recorded: RecordedSpace | None) -> None:
        """Say when the query model stops or starts fitting the index: answering lexical-only, a search
        looks the same from outside (QA 34: the aggregator ran on another model, unnoticed)."""
        if recorded is not None and recorded.model != self.model:
            log.warning(
                "the index holds embeddings of %s, but queries are embedded with %s: search and recall answer "
                "lexical-only until they are the same model (set the aggregator's embedder to the indexer's)",
                recorded,
                self.model,
            )
        elif recorded is not None and self._recorded is not None and self._recorded.model != self.model:
            log.info("the index now holds embeddings of %s, the query model: search and recall use them", recorded)

    async def usable(self) -> bool:
        """The query model is the index's, and the query embedder has not just failed."""
        if time.monotonic() - self._failed_at < self._refresh_seconds:
            return False
        recorded = await self.recorded()
        return recorded is not None and recorded.model == self.model

    async def embed(self, q: str) -> list[float]:
        cached = self._vectors.get(q)
        if cached is not None:
            vector = cached.tolist()
        else:
            try:
                vector = (await self._embedder.embed([q]))[0]
            except EmbeddingError:
                self._failed_at = time.monotonic()
                raise
        self._embedded.add(1, {"cached": cached is not None})
        recorded = await self.recorded()
        if recorded is None or len(vector) != recorded.dimension:
            raise SpaceMismatch(f"a query vector of length {len(vector)}, the index holds {recorded or 'none'}")
        if cached is None:
            self._vectors.put(q, array("d", vector))
        return vector

    def guard(
        self,
        handle: Callable[[Context, Request], Awaitable[Reply]],
        dense: Context,
        lexical: Context,
    ) -> Callable[[Request], Awaitable[Reply]]:
        """`handle` with the dense-capable context when the query model fits the index, else lexical-only."""

        async def guarded(request: Request) -> Reply:
            if not await self.usable():
                return await handle(lexical, request)
            try:
                return await handle(dense, request)
            except EmbeddingError as exc:
                log.warning("query embedding failed, answering lexical-only: %s", exc)
                return await handle(lexical, request)
            except VectorStoreUnavailable as exc:
                log.warning("the vector store failed, answering lexical-only: %s", exc)
                return await handle(lexical, request)

        return guarded
