"""A search's query vector, embedded in the model's thread while the search does its other work.

Search and recall start the embedding first, run what needs no vector (opening the transaction, the
lexical leg), and await the vector only where the dense leg needs it: on two cores the model and
PostgreSQL work at once instead of one after the other.
"""

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

EmbedQuery = Callable[[str], Awaitable[list[float]]]
QueryVector = asyncio.Future[list[float]]


def start_embedding(embed_query: EmbedQuery | None, q: str) -> QueryVector | None:
    """The vector of `q`, being embedded; None without an embedder (the search is lexical-only)."""
    return asyncio.ensure_future(embed_query(q)) if embed_query is not None else None


async def resolved(query_vector: QueryVector | None) -> list[float] | None:
    return None if query_vector is None else await query_vector


@contextmanager
def abandoned_if_unused(query_vector: QueryVector | None) -> Iterator[None]:
    """A search that ends before it awaited its query vector (an error, a page without a dense leg) stops
    the embedding, or takes its error, which would otherwise be logged as never retrieved."""
    try:
        yield
    finally:
        if query_vector is not None and not query_vector.done():
            query_vector.cancel()
        elif query_vector is not None and not query_vector.cancelled():
            query_vector.exception()
