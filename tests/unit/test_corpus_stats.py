"""BM25's corpus statistics: counted on every search for a small org, remembered a while for a big one."""

import uuid
from types import SimpleNamespace
from typing import Any

from cortex_aggregator.corpus_stats import Corpus, CorpusStats


class CountingReads:
    """Answers the statistics statement with `documents`; counts how often it is asked."""

    def __init__(self, documents: float) -> None:
        self.documents = documents
        self.asked = 0

    async def fetch(self, _sql: str, _params: dict[str, Any]) -> list[SimpleNamespace]:
        self.asked += 1
        return [SimpleNamespace(n=self.documents, avgdl=42.0)]


async def test_a_big_orgs_statistics_are_remembered_until_they_expire() -> None:
    clock = [0.0]
    stats = CorpusStats(ttl_seconds=30, exact_below=1000, clock=lambda: clock[0])
    org, reads = uuid.uuid4(), CountingReads(5000)

    assert await stats.of(reads, org) == Corpus(5000, 42.0)  # type: ignore[arg-type]
    reads.documents = 5001
    assert await stats.of(reads, org) == Corpus(5000, 42.0)  # type: ignore[arg-type]
    assert reads.asked == 1

    clock[0] += 31
    assert await stats.of(reads, org) == Corpus(5001, 42.0)  # type: ignore[arg-type]
    assert reads.asked == 2


async def test_a_small_orgs_statistics_are_counted_on_every_search() -> None:
    stats = CorpusStats(exact_below=1000)
    org, reads = uuid.uuid4(), CountingReads(10)
    await stats.of(reads, org)  # type: ignore[arg-type]
    reads.documents = 11
    assert await stats.of(reads, org) == Corpus(11, 42.0)  # type: ignore[arg-type]
    assert reads.asked == 2
