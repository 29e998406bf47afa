"""Ranking metrics with binary relevance."""

import math
from collections.abc import Sequence


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    gains = sum(1 / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return gains / ideal if ideal else 0.0


def recall_at(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def rrf(rankings: Sequence[Sequence[str]], k: int = 60) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1 / (k + rank)
    return sorted(scores, key=lambda doc: -scores[doc])
