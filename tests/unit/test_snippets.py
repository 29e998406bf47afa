"""A search result's snippet shows where the query's words are in the passage, not only its first 280
characters. Before: a word further on in the matched passage was not in the snippet at all (QA 32)."""

from cortex_aggregator.items import SNIPPET_CHARS, shorten, word_starts

FILLER = " ".join(f"filler{n}" for n in range(80))  # ~640 characters


def test_a_short_passage_is_shown_whole_on_one_line() -> None:
    assert shorten("A short\n\npassage.", around=["passage"]) == "A short passage."


def test_a_word_near_the_start_keeps_the_start() -> None:
    snippet = shorten(f"The rhinoceros grazes. {FILLER}", around=["rhinocero"])

    assert snippet.startswith("The rhinoceros grazes.")
    assert snippet.endswith("…") and len(snippet) <= SNIPPET_CHARS + 1


def test_a_word_further_on_is_shown_with_the_words_before_it() -> None:
    snippet = shorten(f"{FILLER} The rhinoceros grazes at dusk. {FILLER}", around=["zebra", "rhinocero"])

    assert snippet.startswith("…filler") and snippet.endswith("…")
    assert "The rhinoceros grazes at dusk." in snippet
    assert len(snippet) <= SNIPPET_CHARS + 2


def test_a_word_near_the_end_shows_the_end() -> None:
    snippet = shorten(f"{FILLER} the rhinoceros.", around=["rhinocero"])

    assert snippet.startswith("…") and snippet.endswith("the rhinoceros.")


def test_only_the_start_of_a_word_matches_and_none_keeps_the_start() -> None:
    passage = f"{FILLER} unrhinocerosed"

    assert shorten(passage, around=["rhinocero"]) == shorten(passage)
    assert shorten(passage).startswith("filler0 ")


def test_the_legs_stems_come_by_weight_else_the_query_words_trimmed() -> None:
    assert word_starts("ignored", {"grass": 0.5, "rhinocero": 2.0}) == ["rhinocero", "grass"]
    assert word_starts("Rhinoceroses at the pond", {}) == ["rhinocero", "pon", "the"]
    assert word_starts(None, {}) == []
