"""DOCX text inside markup python-docx skipped: content controls, tracked changes, smart tags, nested tables."""

import io
import zipfile
from typing import Any

import pytest
from docx.oxml.ns import nsdecls

from cortex_extractors import TooLarge, extract, media_types, samples, word_text
from cortex_extractors.limits import MAX_TEXT_CHARS

_STYLED = samples.docx_file("t", [("h", "p")])  # a package whose styles name Heading1


def _docx(body: str) -> bytes:
    """The sample package with `body` (WordprocessingML) as its main document's body."""
    document = f"<w:document {nsdecls('w')}><w:body>{body}<w:sectPr/></w:body></w:document>"
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(_STYLED)) as source, zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            target.writestr(name, document if name == "word/document.xml" else source.read(name))
    return out.getvalue()


def _text(body: str) -> str:
    return extract(media_types.DOCX, _docx(body)).text


def _p(text: str) -> str:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"


def _table(*rows: str) -> str:
    return f"<w:tbl><w:tblPr/><w:tblGrid><w:gridCol/><w:gridCol/></w:tblGrid>{''.join(rows)}</w:tbl>"


def _row(*cells: str) -> str:
    return f"<w:tr>{''.join(cells)}</w:tr>"


def _cell(*blocks: str) -> str:
    return f"<w:tc>{''.join(blocks)}</w:tc>"


def _control(content: str) -> str:
    """A content control as Word writes one: settings (alias, placeholder) then its content."""
    settings = '<w:sdtPr><w:alias w:val="Client"/><w:placeholder><w:docPart w:val="X"/></w:placeholder></w:sdtPr>'
    return f"<w:sdt>{settings}<w:sdtContent>{content}</w:sdtContent></w:sdt>"


def test_the_qa_document_reads_every_part() -> None:
    """The body of the file QA reported, which read as its first, table-cell and field-result lines only."""
    body = (
        _p("visible paragraph hedgehog")
        + "<w:sdt><w:sdtContent>"
        + _p("sdtcontentmongoose")
        + "</w:sdtContent></w:sdt>"
        + '<w:p><w:ins w:id="1" w:author="a" w:date="2020-01-01T00:00:00Z"><w:r><w:t>trackedinsertsalamander</w:t>'
        + "</w:r></w:ins></w:p>"
        + _table(_row(_cell(_p("outercell"), _table(_row(_cell(_p("nestedcellpelican")))), "<w:p/>")))
        + '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText>HYPERLINK</w:instrText></w:r>'
        + '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>fieldresultjackal</w:t></w:r>'
        + '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
        + '<w:p><w:smartTag w:uri="x" w:element="y"><w:r><w:t>smarttagbadger</w:t></w:r></w:smartTag></w:p>'
    )
    assert _text(body).split("\n\n") == [
        "visible paragraph hedgehog",
        "sdtcontentmongoose",
        "trackedinsertsalamander",
        "outercell nestedcellpelican",
        "fieldresultjackal",
        "smarttagbadger",
    ]


def test_block_content_controls_hold_paragraphs_headings_and_tables() -> None:
    heading = '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Terms</w:t></w:r></w:p>'
    table = _table(_row(_cell(_p("name")), _cell(_p("value"))))
    extracted = extract(media_types.DOCX, _docx(_p("before") + _control(heading + _p("clause") + table) + _p("after")))
    assert extracted.text.split("\n\n") == ["before", "# Terms", "clause", "name | value", "after"]
    assert extracted.title == "Terms"
    assert "Client" not in extracted.text  # the control's settings are no text


def test_content_controls_inside_a_paragraph_nest_and_keep_their_place() -> None:
    inner = _control("<w:r><w:t>Ada</w:t></w:r>")
    outer = _control(f"<w:r><w:t>Ms </w:t></w:r>{inner}")
    assert _text(f"<w:p><w:r><w:t>Dear </w:t></w:r>{outer}<w:r><w:t>,</w:t></w:r></w:p>") == "Dear Ms Ada,"


def test_content_controls_around_rows_and_cells_are_read_in_the_table() -> None:
    """A repeating section wraps rows; a control can wrap a single cell too."""
    table = _table(
        _row(_cell(_p("head")), _control(_cell(_p("wrapped cell")))),
        _control(_row(_cell(_p("repeated 1")), _cell(_p("a"))) + _row(_cell(_p("repeated 2")), _cell(_p("b")))),
    )
    assert _text(table).splitlines() == ["head | wrapped cell", "repeated 1 | a", "repeated 2 | b"]


def test_tracked_insertions_and_moves_read_as_current_text_and_deletions_do_not() -> None:
    paragraph = (
        "<w:p><w:r><w:t>The fee is </w:t></w:r>"
        '<w:del w:id="1" w:author="a"><w:r><w:delText>ten</w:delText></w:r></w:del>'
        '<w:ins w:id="2" w:author="a"><w:r><w:t>twelve</w:t></w:r></w:ins>'
        '<w:moveFrom w:id="3" w:author="a"><w:r><w:t> movedaway</w:t></w:r></w:moveFrom>'
        '<w:moveTo w:id="4" w:author="a"><w:r><w:t> euros</w:t></w:r></w:moveTo><w:r><w:t>.</w:t></w:r></w:p>'
    )
    assert _text(paragraph) == "The fee is twelve euros."


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ('<w:smartTag w:uri="x" w:element="place"><w:r><w:t>Paris</w:t></w:r></w:smartTag>', "Paris"),
        ('<w:customXml w:element="client"><w:r><w:t>Acme</w:t></w:r></w:customXml>', "Acme"),
        ('<w:fldSimple w:instr=" DATE "><w:r><w:t>1 May 2024</w:t></w:r></w:fldSimple>', "1 May 2024"),
        ('<w:dir w:val="rtl"><w:r><w:t>שלום</w:t></w:r></w:dir>', "שלום"),
        ('<w:bdo w:val="rtl"><w:r><w:t>abc</w:t></w:r></w:bdo>', "abc"),
        (
            "<w:hyperlink><w:r><w:t>link </w:t></w:r><w:ins><w:r><w:t>edited</w:t></w:r></w:ins></w:hyperlink>",
            "link edited",
        ),
        ("<w:ins><w:smartTag><w:customXml><w:r><w:t>deep</w:t></w:r></w:customXml></w:smartTag></w:ins>", "deep"),
    ],
)
def test_runs_inside_inline_markup_are_read_in_place(markup: str, expected: str) -> None:
    assert _text(f"<w:p><w:r><w:t>[</w:t></w:r>{markup}<w:r><w:t>]</w:t></w:r></w:p>") == f"[{expected}]"


def test_a_customxml_block_holds_paragraphs() -> None:
    assert _text(f'<w:customXml w:element="letter">{_p("signed")}</w:customXml>') == "signed"


def test_a_nested_table_reads_inside_its_cell_in_document_order() -> None:
    nested = _table(_row(_cell(_p("n1")), _cell(_p("n2"))), _row(_cell(_p("n3")), _cell(_p("n4"))))
    table = _table(_row(_cell(_p("before"), nested, _p("after")), _cell(_p("right"))))
    # The nested cells are apart by spaces: a ` | ` of theirs would read as a cell of the outer row.
    assert _text(table) == "before n1 n2 n3 n4 after | right"


def test_tables_nested_as_deep_as_the_parser_allows_are_read() -> None:
    depth = 83  # 3 elements a level: one more and the document passes libxml2's depth limit of 256
    body = _p("innermost")
    for _ in range(depth):
        body = _table(_row(_cell(body)))
    assert _text(body) == "innermost"


def test_text_inside_content_controls_counts_against_the_output_cap() -> None:
    words = "word " * (MAX_TEXT_CHARS // 5 + 10)
    with pytest.raises(TooLarge, match="extracted text is over"):
        _text(_control(_p(words)))


def test_a_cell_merged_down_many_rows_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    merged = f"<w:tc><w:tcPr><w:vMerge w:val='restart'/></w:tcPr>{_table(_row(_cell(_p('deep'))))}</w:tc>"
    below = "<w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc>"
    rows = [_row(merged, _cell(_p("r0")))] + [_row(below, _cell(_p(f"r{i}"))) for i in range(1, 200)]
    reads: list[object] = []
    read_cell = word_text._cell_text

    def counted(cell: Any) -> str:
        reads.append(cell)
        return read_cell(cell)

    monkeypatch.setattr(word_text, "_cell_text", counted)

    text = _text(_table(*rows))

    assert text.splitlines()[:2] == ["deep | r0", "deep | r1"]
    # The merged cell and the one of its nested table once each (before: once a row), each right-hand cell once.
    assert len(reads) == 1 + 1 + 200
