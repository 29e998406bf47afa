"""Reciprocal rank fusion: score(d) = Σ weight / (k + rank), rank from 1, over every list that has d."""

from collections.abc import Hashable, Sequence
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Sequence[tuple[Sequence[Key], float]],
    k: int = 60,
) -> list[tuple[Key, float]]:
    """Fuse best-first rankings, each with its weight; ties keep the order of first appearance."""
    scores: dict[Key, float] = {}
    for ranking, weight in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: item[1], reverse=True)
