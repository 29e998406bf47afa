"""Reciprocal rank fusion, checked against sums worked out by hand."""

import pytest

from cortex_aggregator.fusion import reciprocal_rank_fusion


def test_scores_are_summed_reciprocal_ranks_with_k_60() -> None:
    lexical = ["a", "b", "c"]
    dense = ["c", "a"]

    fused = reciprocal_rank_fusion([(lexical, 1.0), (dense, 1.0)], k=60)

    # a: 1/61 + 1/62 = 0.032522   c: 1/63 + 1/61 = 0.032266   b: 1/62 = 0.016129
    assert [key for key, _ in fused] == ["a", "c", "b"]
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)


def test_weights_scale_each_ranking() -> None:
    lexical = ["a", "b", "c"]
    dense = ["c", "a"]

    fused = reciprocal_rank_fusion([(lexical, 1.0), (dense, 2.0)], k=60)

    # a: 1/61 + 2/62 = 0.048651   c: 1/63 + 2/61 = 0.048660 — the heavier dense leg lifts c above a
    assert [key for key, _ in fused] == ["c", "a", "b"]
    scores = dict(fused)
    assert scores["c"] == pytest.approx(1 / 63 + 2 / 61)
    assert scores["a"] == pytest.approx(1 / 61 + 2 / 62)


def test_a_zero_weight_ranking_adds_nothing() -> None:
    fused = reciprocal_rank_fusion([(["a", "b"], 1.0), (["b", "z"], 0.0)], k=60)

    assert [key for key, _ in fused] == ["a", "b", "z"]
    assert [score for _, score in fused] == pytest.approx([1 / 61, 1 / 62, 0.0])


def test_k_sets_how_fast_rank_matters() -> None:
    fused = reciprocal_rank_fusion([(["a", "b"], 1.0)], k=1)

    assert [key for key, _ in fused] == ["a", "b"]
    assert [score for _, score in fused] == pytest.approx([1 / 2, 1 / 3])


def test_ties_keep_the_order_of_first_appearance() -> None:
    # x and y score 1/61 + 1/62 each; p and q score 1/63 each
    fused = reciprocal_rank_fusion([(["x", "y", "p"], 1.0), (["y", "x", "q"], 1.0)], k=60)

    assert [key for key, _ in fused] == ["x", "y", "p", "q"]
    assert fused[0][1] == fused[1][1]
    assert fused[2][1] == fused[3][1]


def test_no_rankings_fuse_to_nothing() -> None:
    assert reciprocal_rank_fusion([([], 1.0), ([], 1.0)]) == []
