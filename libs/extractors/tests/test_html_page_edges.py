"""HTML text no reader sees stays out of the text and the title: an unfinished tag or comment at the end of
the file, and the titles and descriptions of inline SVG and MathML."""

import pytest

from cortex_extractors import extract, media_types


@pytest.mark.parametrize(
    "tail",
    [
        "<!-- secret note",
        "<!-- secret <b>bold</b> note",  # markup in the comment is comment too
        '<div title="secret" ',
        '<div class="secret',
        "</secret",
        "<!DOCTYPE secret",
    ],
)
def test_an_unfinished_tag_or_comment_at_the_end_is_not_text(tail: str) -> None:
    """Before: HTMLParser.close() passed it on as text, so `<!-- secret note` was shown and searchable."""
    page = f"<html><body><p>ok</p>\n{tail}".encode()
    assert extract(media_types.HTML, page).text == "ok"


def test_text_at_the_end_is_still_text() -> None:
    page = b"<p>ok</p>fish &chips &amp; mushy peas &amp"  # the parser holds back a last `&…` until the end
    assert extract(media_types.HTML, page).text == "ok\n\nfish &chips & mushy peas &"


ICONS = b"""<!DOCTYPE html>
<html><head><title>Release Notes</title></head>
<body>
<nav><a href="/"><svg viewBox="0 0 16 16" role="img"><title>Home icon</title><desc>A house</desc>
<path d="M0 0h16v16z"/><text>Home</text></svg></a></nav>
<h1>Release 4.2</h1>
<p>Formula <math><title>math title</title><mi>x</mi></math> shown.</p>
</body></html>"""


def test_the_title_is_the_pages_own_not_an_inline_svgs() -> None:
    """QA's page: before, its title was `Release NotesHome icon`."""
    extracted = extract(media_types.HTML, ICONS)
    assert extracted.title == "Release Notes"
    assert extracted.text == "Home\n\n# Release 4.2\n\nFormula x shown."  # a tooltip's text is not shown text


def test_an_svg_title_left_open_ends_with_its_svg() -> None:
    page = b"<h1>Heading</h1><svg><title>icon<path/></svg><p>after</p>"
    extracted = extract(media_types.HTML, page)
    assert extracted.title == "Heading"
    assert extracted.text == "# Heading\n\nafter"


def test_only_the_first_title_of_a_page_is_its_title() -> None:
    page = b"<title>First</title><title>Second</title><p>text</p>"
    assert extract(media_types.HTML, page) == extract(media_types.HTML, b"<title>First</title><p>text</p>")
