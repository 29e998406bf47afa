"""What a reranker plugin is: it scores passages against a query, and may fail without failing a search."""

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


class RerankFailed(Exception):
    """The reranker could not score this time (down, slow, a bad answer): keep the order there was."""


@runtime_checkable
class Reranker(Protocol):
    name: str

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in their order; higher is more relevant. Raises `RerankFailed`."""
        ...
