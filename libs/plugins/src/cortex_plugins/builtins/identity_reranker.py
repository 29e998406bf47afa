"""reranker `none` (the default): keeps the fused order as it is. Searches skip it altogether."""

from collections.abc import Sequence

NAME = "none"


class IdentityReranker:
    name = NAME

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """Scores that keep the order the passages came in."""
        return [float(len(passages) - position) for position in range(len(passages))]


def create() -> IdentityReranker:
    return IdentityReranker()
