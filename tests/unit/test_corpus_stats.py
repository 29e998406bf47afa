"""BM25's corpus statistics: counted on every search for a small org, remembered a while for a big one."""

import uuid
from types import SimpleNamespace
from typing import Any

from cortex_aggregator.corpus_stats import Corpus, CorpusStats


class CountingSession:
    """Answers the statistics statement with `documents`; counts how often it is asked."""

    def __init__(self, documents: float) -> None:
        self.documents = documents
        self.asked = 0

    async def execute(self, _statement: Any, _params: dict[str, Any]) -> Any:
        self.asked += 1
        row = SimpleNamespace(n=self.documents, avgdl=42.0)
        return SimpleNamespace(one=lambda: row)


async def test_a_big_orgs_statistics_are_remembered_until_they_expire() -> None:
    clock = [0.0]
    stats = CorpusStats(ttl_seconds=30, exact_below=1000, clock=lambda: clock[0])
    org, session = uuid.uuid4(), CountingSession(5000)

    assert await stats.of(session, org) == Corpus(5000, 42.0)  # type: ignore[arg-type]
    session.documents = 5001
    assert await stats.of(session, org) == Corpus(5000, 42.0)  # type: ignore[arg-type]
    assert session.asked == 1

    clock[0] += 31
    assert await stats.of(session, org) == Corpus(5001, 42.0)  # type: ignore[arg-type]
    assert session.asked == 2


async def test_a_small_orgs_statistics_are_counted_on_every_search() -> None:
    stats = CorpusStats(exact_below=1000)
    org, session = uuid.uuid4(), CountingSession(10)
    await stats.of(session, org)  # type: ignore[arg-type]
    session.documents = 11
    assert await stats.of(session, org) == Corpus(11, 42.0)  # type: ignore[arg-type]
    assert session.asked == 2
