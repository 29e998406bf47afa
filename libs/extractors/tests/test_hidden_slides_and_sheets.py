"""Hidden slides of a PPTX deck are not read: before, their text and notes were indexed as if shown."""

from cortex_extractors import extract, media_types, samples


def test_a_hidden_slide_is_left_out_with_its_notes_and_does_not_title_the_deck() -> None:
    data = samples.pptx_file(
        [("Draft pitch", "hiddenslidewombat"), ("Roadmap", "Q1 goals"), ("Cut idea", "hiddenquokka"), ("", "Thanks")],
        notes={0: "hiddennotesbilby", 1: "Mention the budget."},
        hidden={0, 2},
    )
    extracted = extract(media_types.PPTX, data)
    assert extracted.title == "Roadmap"
    # An untitled slide keeps its number in the deck, hidden slides counted, as PowerPoint numbers it.
    assert extracted.text.split("\n\n") == ["# Roadmap", "Q1 goals", "Mention the budget.", "# Slide 4", "Thanks"]
