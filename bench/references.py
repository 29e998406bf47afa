"""The reference systems, computed in the benchmark's own run: BM25 (bm25s, English stop words),
dense all-MiniLM-L6-v2 cosine, and their reciprocal rank fusion (k=60)."""

from collections.abc import Sequence

import bm25s
import numpy as np

from bench.metrics import rrf
from cortex_embedding.local_model import LocalModel


class BM25Reference:
    def __init__(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        self.ids = list(ids)
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)

    def rank(self, query: str, k: int) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        results, _ = self.retriever.retrieve(tokens, k=min(k, len(self.ids)), show_progress=False)
        return [self.ids[int(i)] for i in results[0]]


class DenseReference:
    def __init__(self, model: LocalModel, ids: Sequence[str], texts: Sequence[str]) -> None:
        self.model = model
        self.ids = list(ids)
        self.matrix = np.asarray(model.embed(list(texts)), dtype=np.float32)

    def rank(self, query: str, k: int) -> list[str]:
        scores = self.matrix @ np.asarray(self.model.embed([query])[0], dtype=np.float32)
        return [self.ids[int(i)] for i in np.argsort(-scores)[:k]]


def fused(bm25: BM25Reference, dense: DenseReference, query: str, k: int, depth: int = 100) -> list[str]:
    return rrf([bm25.rank(query, depth), dense.rank(query, depth)])[:k]
