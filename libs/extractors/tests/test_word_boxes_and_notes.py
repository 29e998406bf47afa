"""DOCX text outside the body's paragraphs and tables: text boxes where they are anchored, then footnotes and
endnotes, then each distinct header and footer text. Before, all of it was dropped."""

import pytest
from docx.oxml.ns import nsdecls

from cortex_extractors import TooLarge, extract, media_types, samples, word
from cortex_extractors.limits import MAX_TEXT_CHARS

NAMESPACES = " ".join(
    [
        nsdecls("w", "r", "wp", "a"),
        'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"',
        'xmlns:v="urn:schemas-microsoft-com:vml"',
        'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"',
    ]
)


def _docx(body: str, parts: dict[str, str] | None = None) -> bytes:
    return samples.docx_with_body(body, namespaces=NAMESPACES, parts=parts)


def _text(body: str, parts: dict[str, str] | None = None) -> str:
    return extract(media_types.DOCX, _docx(body, parts)).text


def _p(text: str, more_runs: str = "") -> str:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r>{more_runs}</w:p>"


def _drawing_box(content: str) -> str:
    """A run holding a text box as Word writes it: DrawingML, with the same box in VML as the fallback."""
    drawing = (
        '<w:drawing><wp:anchor><a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/'
        f'wordprocessingShape"><wps:wsp><wps:txbx><w:txbxContent>{content}</w:txbxContent></wps:txbx>'
        "<wps:bodyPr/></wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing>"
    )
    fallback = f"<w:pict><v:shape><v:textbox><w:txbxContent>{content}</w:txbxContent></v:textbox></v:shape></w:pict>"
    return (
        f'<w:r><mc:AlternateContent><mc:Choice Requires="wps">{drawing}</mc:Choice>'
        f"<mc:Fallback>{fallback}</mc:Fallback></mc:AlternateContent></w:r>"
    )


def _vml_box(content: str) -> str:
    """A run holding a text box in VML only, as older Word wrote it."""
    shape = f"<v:shape><v:textbox><w:txbxContent>{content}</w:txbxContent></v:textbox></v:shape>"
    return f"<w:r><w:pict>{shape}</w:pict></w:r>"


def test_a_text_box_reads_once_after_the_paragraph_that_anchors_it() -> None:
    box = _p("in the box") + "<w:tbl><w:tr><w:tc>" + _p("box cell") + "</w:tc></w:tr></w:tbl>"
    body = _p("before") + _p("anchor", _drawing_box(box)) + _p("after")
    assert _text(body).split("\n\n") == ["before", "anchor", "in the box", "box cell", "after"]


def test_a_vml_text_box_is_read_too() -> None:
    assert _text(_p("anchor", _vml_box(_p("vml box"))) + _p("after")) == "anchor\n\nvml box\n\nafter"


def test_a_text_box_anchored_in_a_heading_follows_it_and_can_hold_headings() -> None:
    heading = '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>{}</w:t></w:r>{}</w:p>'
    body = heading.format("Outer", _vml_box(heading.format("Inner", "") + _p("inner text")))
    extracted = extract(media_types.DOCX, _docx(body))
    assert extracted.text.split("\n\n") == ["# Outer", "# Inner", "inner text"]
    assert extracted.title == "Outer"


def test_a_text_box_in_a_table_cell_is_part_of_the_cell() -> None:
    cells = "<w:tc>" + _p("cell", _vml_box(_p("boxed"))) + "</w:tc><w:tc>" + _p("next") + "</w:tc>"
    table = f"<w:tbl><w:tr>{cells}</w:tr></w:tbl>"
    assert _text(table) == "cell boxed | next"


def test_a_text_box_inside_a_text_box_follows_its_own_anchor() -> None:
    inner = _vml_box(_p("innermost"))
    body = _p("anchor", _drawing_box(_p("outer one", inner) + _p("outer two"))) + _p("after")
    assert _text(body).split("\n\n") == ["anchor", "outer one", "innermost", "outer two", "after"]


def test_a_deleted_text_box_is_not_read() -> None:
    deleted = f'<w:del w:id="1" w:author="a">{_vml_box(_p("deleted box"))}</w:del>'
    inserted = f'<w:ins w:id="2" w:author="a">{_vml_box(_p("inserted box"))}</w:ins>'
    assert _text(f"<w:p><w:r><w:t>kept</w:t></w:r>{deleted}{inserted}</w:p>") == "kept\n\ninserted box"


def _notes(kind: str, *notes: str) -> str:
    separators = f'<w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}>'
    bodies = "".join(f'<w:{kind} w:id="{n}">{_p(text)}</w:{kind}>' for n, text in enumerate(notes, 1))
    return f"<w:{kind}s {NAMESPACES}>{separators}{bodies}</w:{kind}s>"


def test_footnotes_then_endnotes_follow_the_body() -> None:
    parts = {"endnotes": _notes("endnote", "endnote one"), "footnotes": _notes("footnote", "note one", "note two")}
    body = _p("body", '<w:r><w:footnoteReference w:id="1"/></w:r>')
    assert _text(body, parts).split("\n\n") == ["body", "note one", "note two", "endnote one"]


def _margin(kind: str, *paragraphs: str) -> str:
    return f"<w:{kind} {NAMESPACES}>{''.join(paragraphs)}</w:{kind}>"


def test_each_distinct_header_and_footer_text_follows_the_notes_once() -> None:
    heading = '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Acme Corp</w:t></w:r></w:p>'
    parts = {
        "footer": _margin("ftr", _p("Page footer")),
        "header": _margin("hdr", heading, _p("Confidential", _vml_box(_p("header box")))),
        "header-2": _margin("hdr", heading, _p("Confidential", _vml_box(_p("header box")))),  # a section's copy
        "footer-2": _margin("ftr", _p("Last page footer")),
        "footnotes": _notes("footnote", "a note"),
    }
    extracted = extract(media_types.DOCX, _docx(_p("body"), parts))
    assert extracted.text.split("\n\n") == [
        "body",
        "a note",
        "Acme Corp",  # a heading style in a header makes no heading, nor the title
        "Confidential",
        "header box",
        "Page footer",
        "Last page footer",
    ]
    assert extracted.title is None


def test_headers_count_against_the_output_cap() -> None:
    parts = {"header": _margin("hdr", _p("word " * (MAX_TEXT_CHARS // 5 + 10)))}
    with pytest.raises(TooLarge, match="extracted text is over"):
        _text(_p("body"), parts)


def test_notes_headers_and_footers_are_parts_under_the_part_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    notes = _notes("footnote", *["note"] * 50_000)
    assert len(notes) > 2 * 1024 * 1024
    data = _docx(_p("body"), {"footnotes": notes})
    assert extract(media_types.DOCX, data).text.count("note") == 50_000
    monkeypatch.setattr(word, "MAX_PARSED_PART_BYTES", 1024 * 1024)
    with pytest.raises(TooLarge, match="a part larger than 1 MiB"):
        extract(media_types.DOCX, data)
