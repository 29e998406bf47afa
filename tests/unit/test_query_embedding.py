"""A query sent again (the next page, a facet clicked, an agent recalling the same words) is not embedded again."""

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import pytest

from cortex_aggregator.query_embedding import QueryEmbedding, SpaceMismatch
from cortex_embedding.batcher import BatchingEmbedder
from cortex_embedding.errors import EmbeddingError


class CountingEmbedder:
    name = "counting-model"

    def __init__(self, dimension: int = 3) -> None:
        self.dimension = dimension
        self.texts: list[str] = []
        self.down = False

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.down:
            raise EmbeddingError("the model is down")
        self.texts.extend(texts)
        return [[len(text) / 10, 0.1, 1 / 3] for text in texts]  # doubles no float32 holds exactly


def recorded_space(model: str, dimension: int) -> Any:
    """A sessionmaker whose one query answers the recorded model and dimension."""

    class Session:
        async def execute(self, _statement: Any) -> Any:
            return SimpleNamespace(first=lambda: SimpleNamespace(model=model, dimension=dimension))

    @asynccontextmanager
    async def sessions() -> AsyncIterator[Session]:
        yield Session()

    return sessions


Make = Callable[..., QueryEmbedding]


@pytest.fixture
async def query_embedding() -> AsyncIterator[Make]:
    """QueryEmbedding(embedder, cached_queries=8, dimension=3) over a real batcher, closed afterwards."""
    batchers: list[BatchingEmbedder] = []

    def make(embedder: CountingEmbedder, cached_queries: int = 8, dimension: int = 3) -> QueryEmbedding:
        batchers.append(BatchingEmbedder(embedder))
        return QueryEmbedding(recorded_space(embedder.name, dimension), batchers[-1], cached_queries=cached_queries)

    yield make
    for batcher in batchers:
        await batcher.close()


async def test_a_repeated_query_reuses_its_vector_exactly(query_embedding: Make) -> None:
    embedder = CountingEmbedder()
    queries = query_embedding(embedder)
    first = await queries.embed("onboarding checklist")
    again = await queries.embed("onboarding checklist")
    assert again == first
    assert embedder.texts == ["onboarding checklist"]
    await queries.embed("another question")
    assert embedder.texts == ["onboarding checklist", "another question"]


async def test_the_least_recently_used_query_is_forgotten_first(query_embedding: Make) -> None:
    embedder = CountingEmbedder()
    queries = query_embedding(embedder, cached_queries=2)
    for q in ["a", "b", "a", "c"]:  # "a" used again after "b": "b" is the one dropped for "c"
        await queries.embed(q)
    await queries.embed("a")
    await queries.embed("b")
    assert embedder.texts == ["a", "b", "c", "b"]


async def test_no_cache_embeds_every_time(query_embedding: Make) -> None:
    embedder = CountingEmbedder()
    queries = query_embedding(embedder, cached_queries=0)
    await queries.embed("same")
    await queries.embed("same")
    assert embedder.texts == ["same", "same"]


async def test_a_failed_or_mismatched_embedding_is_not_kept(query_embedding: Make) -> None:
    embedder = CountingEmbedder()
    queries = query_embedding(embedder)
    embedder.down = True
    with pytest.raises(EmbeddingError):
        await queries.embed("q")
    embedder.down = False
    assert not await queries.usable()  # a failed embedder is left alone for a while

    mismatched = query_embedding(embedder, dimension=384)
    with pytest.raises(SpaceMismatch):
        await mismatched.embed("q")
    with pytest.raises(SpaceMismatch):
        await mismatched.embed("q")
    assert embedder.texts == ["q", "q"]


async def test_a_query_model_that_is_not_the_indexs_is_said_once(
    query_embedding: Make, caplog: pytest.LogCaptureFixture
) -> None:
    batcher = BatchingEmbedder(CountingEmbedder())
    try:
        queries = QueryEmbedding(recorded_space("other-model", 3), batcher, refresh_seconds=0)
        for _ in range(3):
            assert not await queries.usable()
    finally:
        await batcher.close()
    # Before: nothing said, while every search and recall answered lexical-only.
    said = [r.getMessage() for r in caplog.records if "lexical-only until they are the same model" in r.getMessage()]
    assert said == [
        "the index holds embeddings of other-model (dimension 3), but queries are embedded with counting-model: "
        "search and recall answer lexical-only until they are the same model (set the aggregator's embedder to "
        "the indexer's)"
    ]
