"""A hidden HTML element hides its own content only, also when its end tag is left out (as p, li, td… allow),
and all of it, however deeply nested."""

import time

import pytest

from cortex_extractors import extract, media_types

HIDDEN_P = b"""<html><head><title>Hidden P Test</title></head><body>
<p hidden>hiddenparagraph<p>visibleafterhiddenp gecko</p><ul><li>listitem iguana</li></ul></body></html>"""
HIDDEN_LI = b"""<html><body><h1>Menu</h1><ul><li hidden>hiddenitem<li>visibleitem toucan<li>another</ul>
<p>closingparagraph toucan</p></body></html>"""


@pytest.mark.parametrize(
    ("page", "text"),
    [
        pytest.param(HIDDEN_P, "visibleafterhiddenp gecko\n\n- listitem iguana", id="p-ended-by-the-next-p"),
        pytest.param(
            HIDDEN_LI, "# Menu\n\n- visibleitem toucan\n\n- another\n\nclosingparagraph toucan", id="li-ended-by-an-li"
        ),
        pytest.param(b"<ul><li hidden>secret<li>shown</li></ul>", "- shown", id="li-then-a-closed-li"),
        pytest.param(b"<ul><li>first<li hidden>secret</ul>tail<p>after", "- first\n\ntail\n\nafter", id="li-by-its-ul"),
        pytest.param(b"<div><p hidden>secret</div>after", "after", id="p-ended-by-its-container"),
        pytest.param(
            b"<div hidden><p>one<p>two<div><p>deeper</div>three</div><p>after", "after", id="div-with-open-ps-inside"
        ),
        pytest.param(
            b"<ul><li hidden>a<ul><li>b<li>c</ul>still hidden<li>shown</ul>", "- shown", id="li-around-a-nested-list"
        ),
        pytest.param(b"<ul><li hidden><p>a<div>b</div></p>still hidden</ul><p>after", "after", id="stray-p-end-inside"),
        pytest.param(
            b"<table><tr><td>a<td hidden>secret<td>b<tr hidden><td>row secret<tr><td>c</table>",
            "a | b\n\nc",
            id="table-cells-and-rows",
        ),
        pytest.param(b"<dl><dt>term<dd hidden>secret<dt>next</dl>", "term\n\nnext", id="dd-ended-by-dt"),
    ],
)
def test_a_hidden_element_hides_only_its_own_content(page: bytes, text: str) -> None:
    assert extract(media_types.HTML, page).text == text


def _nested(depth: int, inner: str, closed: int, outer: str) -> bytes:
    """A hidden div holding `depth` nested divs around `inner`; `closed` of them closed before `outer`."""
    return (
        f"<p>visible</p><div hidden>{'<div>' * depth}{inner}{'</div>' * closed}{outer}"
        f"{'</div>' * (depth - closed)} also hidden</div><p>after</p>"
    ).encode()


@pytest.mark.parametrize("depth", [70, 1_000])
def test_a_hidden_element_hides_what_it_holds_at_any_depth(depth: int) -> None:
    """QA's page: before, elements past the 64th level were not tracked, so their end tags closed the
    hidden div early and `leaked` and `also hidden` were shown."""
    page = _nested(depth, "inner", depth - 4, "leaked")
    assert extract(media_types.HTML, page).text == "visible\n\nafter"


def test_deep_nesting_in_a_hidden_element_takes_linear_time() -> None:
    """About a second for 200,000 levels here; work that grew with the depth at each tag would take minutes."""
    page = _nested(200_000, "inner", 199_996, "leaked")
    started = time.process_time()
    assert extract(media_types.HTML, page).text == "visible\n\nafter"
    assert time.process_time() - started < 15


@pytest.mark.parametrize(
    ("page", "text"),
    [
        pytest.param(b"<p>before</p><dialog><p>secret<p>more secret</dialog><p>after", "before\n\nafter", id="dialog"),
        pytest.param(b"<dialog><form>secret<dialog>inner</dialog>still</form></dialog>after", "after", id="nested"),
        pytest.param(b"<dialog open><p>shown</dialog><p>after", "shown\n\nafter", id="open-dialog"),
        pytest.param(b'<DIALOG OPEN=""><p>shown</DIALOG>', "shown", id="open-dialog-uppercase"),
    ],
)
def test_a_dialog_is_shown_only_when_open(page: bytes, text: str) -> None:
    """Before: a closed dialog's text was indexed, though browsers show a dialog only with `open`."""
    assert extract(media_types.HTML, page).text == text


@pytest.mark.parametrize(
    "element",
    [
        '<video src="talk.mp4"><p>Your browser does not support video.</p></video>',
        '<audio controls><source src="a.ogg">No audio support.</audio>',
        "<canvas>Charts need a canvas.</canvas>",
        '<input list="l"><datalist id="l"><option>suggestion</option></datalist>',
        "<noembed>no embed support</noembed>",
        "<noframes>no frame support</noframes>",
        "<template><p>inert</p></template>",
        "<noscript><p>turn on JavaScript</p></noscript>",
    ],
)
def test_content_browsers_do_not_render_is_not_text(element: str) -> None:
    """Fallback content (of media and canvas), display:none elements of the HTML spec's rendering section
    (datalist, noembed, noframes), inert templates and no-script content: none is shown."""
    page = f"<p>before</p>{element}<p>after</p>".encode()
    assert extract(media_types.HTML, page).text == "before\n\nafter"


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<table><tr><td><span hidden>x</td><td>y</td></tr></table><p>after", "y\n\nafter"),
        ('<table><tr><td><div style="display:none">x</td><td>y</td></tr></table><p>after', "y\n\nafter"),
        ("<ul><li><span hidden>x</li><li>y</li></ul><p>after", "- y\n\nafter"),
    ],
)
def test_a_hidden_element_left_open_ends_with_its_cell_or_item(html: str, text: str) -> None:
    """Before (QA 45): only an element whose end tag may be left out ended with its container, so an
    unclosed `<span hidden>` in a table cell or list item hid the rest of the page."""
    assert extract(media_types.HTML, html.encode()).text == text
