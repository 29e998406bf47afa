"""A document's title: its metadata's, unless that is a generator's placeholder; else its first heading."""

import pytest

from cortex_extractors import extract, media_types, samples


@pytest.mark.parametrize(
    "placeholder", ["PowerPoint Presentation", "powerpoint  presentation", " POWERPOINT PRESENTATION"]
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
