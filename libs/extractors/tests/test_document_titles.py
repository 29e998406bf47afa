"""A document's title: its metadata's, unless that is a generator's placeholder or shows nothing, else its first
heading; control characters are no part of it."""

import pytest

from cortex_extractors import extract, media_types, samples


@pytest.mark.parametrize(
    "placeholder",
    [
        "PowerPoint Presentation",
        "powerpoint  presentation",
        " POWERPOINT PRESENTATION",
        "PowerPoint-Präsentation",
        "Présentation PowerPoint",
        "Presentación de PowerPoint",
    ],
)
def test_a_deck_titled_as_powerpoint_titles_every_new_deck_is_titled_by_its_first_slide(placeholder: str) -> None:
    """Before: every such deck was titled `PowerPoint Presentation`, in search results and citations."""
    data = samples.pptx_file([("Roadmap 2027", "Goals")], core_title=placeholder)
    assert extract(media_types.PPTX, data).title == "Roadmap 2027"


def test_a_document_titled_as_python_docx_titles_a_package_without_one_is_titled_by_its_first_heading() -> None:
    data = samples.docx_file("Hiring plan", [("Roles", "Two engineers.")], core_title="Word Document")
    assert extract(media_types.DOCX, data).title == "Hiring plan"


@pytest.mark.parametrize(
    ("media_type", "data", "title"),
    [
        (
            media_types.PPTX,
            samples.pptx_file([("Slide", "b")], core_title="PowerPoint Presentation 2"),
            "PowerPoint Presentation 2",
        ),
        (media_types.PPTX, samples.pptx_file([("Slide", "b")], core_title="Word Document"), "Word Document"),
        (
            media_types.DOCX,
            samples.docx_file("Heading", [], core_title="PowerPoint Presentation"),
            "PowerPoint Presentation",
        ),
        (media_types.DOCX, samples.docx_file("Heading", [], core_title="Word Documents"), "Word Documents"),
    ],
)
def test_a_title_that_only_looks_like_a_placeholder_is_kept(media_type: str, data: bytes, title: str) -> None:
    assert extract(media_type, data).title == title


@pytest.mark.parametrize(
    ("media_type", "data", "title"),
    [
        (media_types.PDF, samples.pdf_file(["text"], title="\x07Survey\x1b results\x7f"), "Survey results"),
        (media_types.HTML, b"<title>\x1b[1mBold\x1b[0m\x08 move</title><p>text", "[1mBold[0m move"),
        (media_types.MARKDOWN, b"# \x07Release\x0e plan\n\ntext", "Release plan"),
        (
            media_types.PPTX,
            samples.pptx_file([("Slide", "b")], core_title="Deck\x9b\x80 title\x85two"),
            "Deck title two",
        ),
        (media_types.DOCX, samples.docx_file("Heading", [], core_title="\x90Memo\x9f"), "Memo"),
        (media_types.HTML, b"<title>Tab\tand\x1funit separator</title>", "Tab and unit separator"),
    ],
)
def test_control_characters_are_not_part_of_a_title(media_type: str, data: bytes, title: str) -> None:
    """Before: a bell, an escape or a C1 control from a file's metadata stayed in its title; those that are
    white space (tab, unit separator, NEL) part words, as before."""
    assert extract(media_type, data).title == title


@pytest.mark.parametrize(
    ("media_type", "data", "title"),
    [
        (media_types.DOCX, samples.docx_file("The heading", [], core_title="\u200b\u200d \ufeff"), "The heading"),
        (media_types.PPTX, samples.pptx_file([("First slide", "b")], core_title="\u2060\u200c"), "First slide"),
        (media_types.HTML, "<title>\u200b</title><h1>Heading</h1>".encode(), "Heading"),
    ],
)
def test_a_title_with_nothing_to_see_gives_way_to_the_first_heading(media_type: str, data: bytes, title: str) -> None:
    """Before: a zero-width title won over the first heading, and the indexer then titled the document by
    its file name, as it does a blank title."""
    assert extract(media_type, data).title == title


def test_format_characters_inside_a_title_stay() -> None:
    data = samples.docx_file("Heading", [], core_title="\u200fשלום\u200f and co\u00adoperate")
    assert extract(media_types.DOCX, data).title == "\u200fשלום\u200f and co\u00adoperate"
