"""A model call's sorted texts are cut into the cheapest slices: padded tokens plus a fixed cost per run."""

import itertools

from hypothesis import given
from hypothesis import strategies as st

from cortex_embedding.slicing import MAX_SLICE, RUN_OVERHEAD_TOKENS, padded_tokens, slices


def cost(lengths: list[int], cuts: list[tuple[int, int]]) -> int:
    return sum(lengths[start] * (end - start) + RUN_OVERHEAD_TOKENS for start, end in cuts)


def every_slicing(n: int) -> list[list[tuple[int, int]]]:
    options = []
    for inner in itertools.product([False, True], repeat=n - 1):
        bounds = [0] + [i + 1 for i, cut in enumerate(inner) if cut] + [n]
        cuts = list(itertools.pairwise(bounds))
        if all(end - start <= MAX_SLICE for start, end in cuts):
            options.append(cuts)
    return options


@given(st.lists(st.integers(min_value=1, max_value=256), min_size=1, max_size=9))
def test_slices_are_the_cheapest_way_to_cut_the_sorted_texts(lengths: list[int]) -> None:
    ordered = sorted(lengths, reverse=True)
    cuts = slices(ordered)
    assert cuts[0][0] == 0 and cuts[-1][1] == len(ordered)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(cuts))
    assert cost(ordered, cuts) == min(cost(ordered, option) for option in every_slicing(len(ordered)))


def test_a_jump_in_length_starts_a_new_slice_and_equal_texts_fill_slices_to_the_cap() -> None:
    cuts = slices([200] * 4 + [40] * 40)
    assert cuts[0] == (0, 4)
    assert len(cuts) == 4 and all(end - start <= MAX_SLICE for start, end in cuts)  # 40 texts: 3 runs, not more
    assert padded_tokens([40] * 40 + [200] * 4) == 200 * 4 + 40 * 40  # no padding at all


def test_no_texts_no_slices() -> None:
    assert slices([]) == []
