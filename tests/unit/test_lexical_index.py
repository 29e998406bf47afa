"""The in-memory BM25 index ranks as BM25 computed plainly over the documents as they now are, through any
sequence of additions, edits and deletions, before and after its base is rebuilt."""

import math
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex_aggregator.lexical_index import DocumentPostings, LexicalIndex

K1, B = 1.5, 0.75
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
IDS = [uuid.UUID(int=i * 0x1F3D5B79) for i in range(1, 9)]


def plain_bm25(documents: dict[uuid.UUID, DocumentPostings], query: list[tuple[str, int]]) -> dict[uuid.UUID, float]:
    live = [d for d in documents.values() if d.live]
    n = len(live)
    average = max(sum(d.tokens for d in live) / n, 1.0) if n else 1.0
    scores: dict[uuid.UUID, float] = {}
    for lexeme, count in query:
        holders = [(d, d.tfs[list(d.lexemes).index(lexeme)]) for d in live if lexeme in d.lexemes]
        df = len(holders)
        if not df:
            continue
        weight = count * math.log(1 + (max(n, df) - df + 0.5) / (df + 0.5))
        for d, tf in holders:
            part = weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * d.length / average))
            scores[d.id] = scores.get(d.id, 0.0) + part
    return scores


document = st.builds(
    lambda doc_id, live, words, length: DocumentPostings(
        doc_id, live, length, list(words), [words[w] for w in words], length
    ),
    st.sampled_from(IDS),
    st.booleans(),
    st.dictionaries(st.sampled_from(WORDS), st.integers(1, 5), max_size=4),
    st.integers(1, 40),
)
query = st.dictionaries(st.sampled_from([*WORDS, "unseen"]), st.integers(1, 2), min_size=1, max_size=3)


def assert_ranks_as_plain_bm25(
    index: LexicalIndex, current: dict[uuid.UUID, DocumentPostings], q: dict[str, int], n: int
) -> None:
    ranked = index.rank(list(q.items()), n, K1, B)
    expected = plain_bm25(current, list(q.items()))
    high, low = index.matching(q)  # what facets with `q` count: every live document with one of its words
    assert {uuid.UUID(int=int(h) << 64 | int(lo)) for h, lo in zip(high, low, strict=True)} == set(expected)
    best = sorted(expected.items(), key=lambda item: (-item[1], item[0]))[:n]
    assert ranked.ids == [doc_id for doc_id, _ in best]
    assert ranked.scores == pytest.approx([score for _, score in best])
    assert index.live_documents == sum(d.live for d in current.values())


@settings(max_examples=300, deadline=None)
@given(batches=st.lists(st.lists(document, max_size=5), max_size=6), q=query, n=st.integers(1, 10))
def test_ranks_as_plain_bm25_through_any_changes(
    batches: list[list[DocumentPostings]], q: dict[str, int], n: int
) -> None:
    index = LexicalIndex(min_merge_postings=3)  # merges often: both the base and the changes are exercised
    current: dict[uuid.UUID, DocumentPostings] = {}
    for batch in batches:
        index.apply(batch)
        current.update({d.id: d for d in batch})
    assert_ranks_as_plain_bm25(index, current, q, n)


@settings(max_examples=200, deadline=None)
@given(
    loaded=st.lists(document, max_size=8, unique_by=lambda d: d.id),
    batches=st.lists(st.lists(document, max_size=5), max_size=3),
    q=query,
    n=st.integers(1, 10),
)
def test_a_loaded_index_ranks_as_plain_bm25_then_through_any_changes(
    loaded: list[DocumentPostings], batches: list[list[DocumentPostings]], q: dict[str, int], n: int
) -> None:
    index = LexicalIndex.built(loaded)  # as a load builds it: every document once, straight into the base
    current = {d.id: d for d in loaded}
    assert_ranks_as_plain_bm25(index, current, q, n)
    for batch in batches:
        index.apply(batch)
        current.update({d.id: d for d in batch})
    index.merge()
    assert_ranks_as_plain_bm25(index, current, q, n)


def test_weights_and_ties_by_id() -> None:
    index = LexicalIndex()
    twins = [DocumentPostings(doc_id, True, 10, ["alpha"], [2], 10) for doc_id in reversed(IDS[:3])]
    index.apply([*twins, DocumentPostings(IDS[3], True, 10, ["beta"], [1], 10)])
    ranked = index.rank([("alpha", 1), ("gamma", 1)], 5, K1, B)
    assert ranked.ids == sorted(IDS[:3])  # equal scores: ascending id, as the SQL leg orders them
    assert set(ranked.weights) == {"alpha"}  # a word no document has carries no weight
    assert ranked.weights["alpha"] == pytest.approx(math.log(1 + 1.5 / 3.5))


def test_merge_keeps_the_ranking() -> None:
    index = LexicalIndex()
    index.apply(
        [DocumentPostings(doc_id, True, 5 + i, ["alpha", "beta"], [1 + i, 1], 5 + i) for i, doc_id in enumerate(IDS)]
    )
    before = index.rank([("alpha", 1)], 8, K1, B)
    index.merge()
    index.apply([DocumentPostings(IDS[0], False, 0)])
    after = index.rank([("alpha", 1)], 8, K1, B)
    assert before.ids[-1] == IDS[0] and IDS[0] not in after.ids
    index.merge()
    assert index.rank([("alpha", 1)], 8, K1, B).ids == after.ids
    assert index.postings == 2 * (len(IDS) - 1)


def test_an_empty_index_ranks_nothing() -> None:
    assert LexicalIndex().rank([("alpha", 1)], 10, K1, B).ids == []
