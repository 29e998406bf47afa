"""A search embeds its query while its lexical leg runs; a search that ends first leaves nothing behind."""

import asyncio
import gc
from typing import Any

from cortex_aggregator.query_vector import abandoned_if_unused
from cortex_embedding.errors import EmbeddingError


async def test_an_embedding_still_running_when_the_search_ends_is_cancelled() -> None:
    started = asyncio.Event()

    async def slow_embedding() -> list[float]:
        started.set()
        await asyncio.sleep(60)
        return [0.0]

    query_vector = asyncio.ensure_future(slow_embedding())
    await started.wait()
    with abandoned_if_unused(query_vector):
        pass
    await asyncio.sleep(0)
    assert query_vector.cancelled()


def _reported() -> list[dict[str, Any]]:
    """What reaches the running loop's exception handler from now on."""
    reported: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: reported.append(context))
    return reported


async def _failed_embedding() -> asyncio.Future[list[float]]:
    async def failing_embedding() -> list[float]:
        raise EmbeddingError("the model is down")

    query_vector = asyncio.ensure_future(failing_embedding())
    await asyncio.sleep(0)
    assert query_vector.done()
    return query_vector


async def test_an_embedding_that_failed_unawaited_is_not_reported_as_a_lost_error() -> None:
    reported = _reported()
    query_vector = await _failed_embedding()
    with abandoned_if_unused(query_vector):
        pass
    del query_vector
    gc.collect()
    assert reported == []


async def test_without_the_guard_the_same_failure_is_reported() -> None:
    """The check above can fail: an unretrieved failure does reach the loop's exception handler."""
    reported = _reported()
    query_vector = await _failed_embedding()
    del query_vector
    gc.collect()
    assert [context["message"] for context in reported] == ["Task exception was never retrieved"]
