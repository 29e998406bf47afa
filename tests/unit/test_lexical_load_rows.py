"""A loaded index's rows are freed in the worker thread that built it, a slice at a time, not on the loop."""

import uuid

import pytest

from cortex_aggregator import lexical_indexes
from cortex_aggregator.lexical_index import DocumentPostings, LexicalIndex


def test_the_build_leaves_the_rows_empty_and_indexes_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical_indexes, "FREE_ROWS", 3)
    ids = [uuid.uuid4() for _ in range(10)]
    rows: list[dict[str, object]] = [
        {"id": i, "live": True, "token_count": 4, "lexemes": ["pricing", "plan"], "tfs": [3, 1], "length": 4}
        for i in ids
    ]
    expected = LexicalIndex.built(DocumentPostings(i, True, 4, ["pricing", "plan"], [3, 1], 4) for i in ids)
    index = lexical_indexes._built(rows)
    assert rows == []
    assert index.live_documents == expected.live_documents == 10
    assert index.rank([("pricing", 1)], 10, 1.2, 0.75) == expected.rank([("pricing", 1)], 10, 1.2, 0.75)
