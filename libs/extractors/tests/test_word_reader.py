"""The DOCX reader gives what the python-docx extractor it replaced gave, on documents python-docx writes,
but for the markup python-docx skipped with all it held: the reader reads what it holds in its place."""

import io
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from xml.sax.saxutils import escape as xml_escape

import docx
import pytest
from docx.blkcntnr import BlockItemContainer
from docx.document import Document as WordDocument
from docx.enum.style import WD_STYLE_TYPE
from docx.enum.text import WD_BREAK
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls, qn
from docx.table import Table
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from cortex_extractors import CorruptFile, extract, media_types, samples, word_package, word_styles
from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import BoundedText, short_title
from cortex_extractors.word import heading_level
from cortex_extractors.word_package import Part

W_DECL = nsdecls("w")


def _python_docx_blocks(
    out: BoundedText, container: WordDocument | BlockItemContainer, *, headings: bool
) -> str | None:
    """The extractor's block loop as it was, on python-docx; returns the first heading."""
    first_heading = None
    for block in container.iter_inner_content():
        if isinstance(block, Table):
            rows = []
            for row in block.rows:
                cells: list[str] = []
                last = None
                for cell in row.cells:
                    if cell._tc is not last:  # python-docx repeats a cell once per grid column it spans
                        cells.append(" ".join(cell.text.split()))
                    last = cell._tc
                if any(cells):
                    rows.append(" | ".join(cells))
            out.add_lines(rows)
            continue
        style = block.style
        level = heading_level((style.name if style is not None else None) or "") if headings else 0
        if level:
            out.heading(level, block.text)
            first_heading = first_heading or short_title(block.text)
        else:
            out.add(block.text)
    return first_heading


def python_docx_extract(data: bytes) -> Extracted:
    """The extractor as it was, on python-docx: the reference the reader must match. Plus what it left out
    that python-docx reads too: each distinct header and footer text, headers first, after the body."""
    document = docx.Document(io.BytesIO(data))
    out = BoundedText()
    first_heading = _python_docx_blocks(out, document, headings=True)
    sections = document.sections
    headers = [kind for section in sections for kind in (section.header, section.first_page_header)]
    footers = [kind for section in sections for kind in (section.footer, section.first_page_footer)]
    shown: set[str] = set()
    for margin in headers + footers:
        if not margin.is_linked_to_previous:  # else it has no part of its own
            part_out = BoundedText()
            _python_docx_blocks(part_out, margin, headings=False)
            if (text := part_out.text()) not in shown:
                shown.add(text)
                out.add(text)
    title = short_title(document.core_properties.title) or first_heading
    return Extracted(title=title, text=out.text())


def _saved(document: WordDocument) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _repackaged(data: bytes, edit: Callable[[dict[str, bytes]], object]) -> bytes:
    """The package after `edit` changed its members (name → content) in place."""
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        members = {name: source.read(name) for name in source.namelist()}
    edit(members)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for name, content in members.items():
            target.writestr(name, content)
    return out.getvalue()


def _without_part(members: dict[str, bytes], part: str, rels: str, kind: str) -> None:
    """Drops `part` and the relationships of type `…/kind` in `rels` that named it."""
    del members[part]
    root = etree.fromstring(members[rels])
    for rel in list(root):
        if rel.get("Type", "").endswith(f"/{kind}"):
            root.remove(rel)
    members[rels] = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)


# Markup python-docx skipped, content and all, which the reader reads through (some of `word_text.WRAPPERS`).
_WRAPPERS = [qn(f"w:{tag}") for tag in ("sdt", "sdtContent", "ins", "moveTo", "smartTag", "customXml", "fldSimple")]
_WRAPPER_SETTINGS = [qn(f"w:{tag}") for tag in ("sdtPr", "sdtEndPr", "smartTagPr", "customXmlPr")]


def _unwrapped(data: bytes) -> bytes:
    """The package with `_WRAPPERS` replaced by their content: the reference python-docx is to read."""

    def edit(members: dict[str, bytes]) -> None:
        root = etree.fromstring(members["word/document.xml"])
        for wrapper in list(root.iter(*_WRAPPERS)):
            parent = wrapper.getparent()
            assert parent is not None
            index = parent.index(wrapper)
            parent[index : index + 1] = [child for child in wrapper if child.tag not in _WRAPPER_SETTINGS]
        members["word/document.xml"] = etree.tostring(root)

    return _repackaged(data, edit)


def runs_and_hyperlinks() -> bytes:
    document = docx.Document()
    document.core_properties.title = ""
    document.sections[0].header.paragraphs[0].text = "header text, after the body"
    document.sections[0].footer.add_paragraph("footer text, after the header")
    document.add_heading("Runs and links", level=0)
    document.add_paragraph("A paragraph with no style at all.")
    paragraph = document.add_paragraph("tab")
    run = paragraph.add_run("then")
    run.add_tab()
    run.add_text("line")
    run.add_break()
    run.add_text("page")
    run.add_break(WD_BREAK.PAGE)
    run.add_text("column")
    run.add_break(WD_BREAK.COLUMN)
    paragraph.add_run("set as text:\tafter tab\nafter newline")
    paragraph._p.append(
        parse_xml(
            f"<w:r {W_DECL}><w:cr/><w:t>no</w:t><w:noBreakHyphen/><w:t>break</w:t><w:ptab/>"
            '<w:t xml:space="preserve">  spaced  </w:t><w:t/><w:br w:type="textWrapping"/>'
            '<w:delText>deleted</w:delText><w:sym w:char="F04A"/><w:t>end</w:t></w:r>'
        )
    )
    link = document.part.relate_to("https://example.com/a?b=c", RT.HYPERLINK, is_external=True)
    linked = document.add_paragraph("see ")
    linked._p.append(
        parse_xml(
            f'<w:hyperlink {nsdecls("w", "r")} r:id="{link}"><w:r><w:t>the link</w:t></w:r>'
            "<w:r><w:tab/><w:t>text</w:t></w:r></w:hyperlink>"
        )
    )
    linked.add_run(" and after.")
    hidden = document.add_paragraph("kept, ")
    for wrapper in ("w:ins", "w:smartTag", "w:fldSimple", "w:customXml"):
        hidden._p.append(parse_xml(f"<{wrapper} {W_DECL}><w:r><w:t>inside {wrapper}</w:t></w:r></{wrapper}>"))
    hidden.add_run("also kept")
    control = "<w:sdtContent><w:p><w:r><w:t>in a content control</w:t></w:r></w:p></w:sdtContent>"
    document.element.body.insert(-1, parse_xml(f"<w:sdt {W_DECL}>{control}</w:sdt>"))
    document.add_paragraph("   ")
    document.add_paragraph("Ünïcödé — 中文 ✓")
    return _saved(document)


def headings_of_every_level() -> bytes:
    document = docx.Document()
    document.core_properties.title = "Core title wins"
    document.add_heading("", level=1)  # an empty heading is no title
    for level in range(10):
        document.add_heading(f"Heading at level {level}", level=level)
        document.add_paragraph(f"Body under level {level}.")
    document.add_paragraph("Styled by name", style="Heading 3")
    document.add_paragraph("Quote", style="Intense Quote")
    document.add_paragraph("Listed", style="List Number")
    return _saved(document)


def custom_and_odd_styles() -> bytes:
    document = docx.Document()
    document.add_paragraph("First, unstyled.")
    document.styles.add_style("Summary Block", WD_STYLE_TYPE.PARAGRAPH)
    document.add_paragraph("In a custom style whose id is SummaryBlock", style="Summary Block")
    document.styles.add_style("Heading 12", WD_STYLE_TYPE.PARAGRAPH)
    document.add_paragraph("A custom Heading 12", style="Heading 12")
    # Word in German: the style id is "berschrift2", the name still "heading 2".
    document.styles["Heading 2"].element.set(qn("w:styleId"), "berschrift2")
    localized = document.add_paragraph("Localized heading two")
    localized._p.style = "berschrift2"
    unknown = document.add_paragraph("Names a style that does not exist")
    unknown._p.style = "NoSuchStyle"
    wrong_type = document.add_paragraph("Names a character style")
    wrong_type._p.style = "DefaultParagraphFont"
    blank = document.add_paragraph("Names an empty style id")
    blank._p.style = ""
    stale = document.add_paragraph("Stale id after the rename")
    stale._p.style = "Heading2"  # the id before the rename, now unknown
    return _saved(document)


def a_heading_as_the_default_style() -> bytes:
    document = docx.Document()
    document.styles["Normal"].element.set(qn("w:default"), "0")
    document.styles["Heading 4"].element.set(qn("w:default"), "true")
    document.add_paragraph("Unstyled, so in the default style: Heading 4")
    document.add_paragraph("Explicitly a Title", style="Title")
    return _saved(document)


def merged_tables() -> bytes:
    document = docx.Document()
    document.add_paragraph("Before the tables.")
    grid = document.add_table(rows=4, cols=4)
    for r, row in enumerate(grid.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"r{r}c{c}"
    grid.cell(0, 0).merge(grid.cell(0, 1))  # across
    grid.cell(1, 3).merge(grid.cell(3, 3))  # down
    grid.cell(2, 0).merge(grid.cell(3, 1))  # a block of two by two
    grid.cell(1, 0).add_paragraph("  second\tparagraph \n in the cell ")
    same = document.add_table(rows=1, cols=3)
    for cell, text in zip(same.rows[0].cells, ("same", "same", "other"), strict=True):
        cell.text = text
    # Rows that start late (gridBefore), a merge that continues under a shifted row, a span of 0.
    document.element.body.insert(
        -1,
        parse_xml(
            f"<w:tbl {W_DECL}><w:tblPr/><w:tblGrid><w:gridCol/><w:gridCol/><w:gridCol/></w:tblGrid>"
            "<w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc>"
            '<w:tc><w:tcPr><w:vMerge w:val="restart"/></w:tcPr><w:p><w:r><w:t>tall</w:t></w:r></w:p></w:tc>'
            "<w:tc><w:p><w:r><w:t>c</w:t></w:r></w:p></w:tc></w:tr>"
            '<w:tr><w:trPr><w:gridBefore w:val="1"/></w:trPr>'
            "<w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc><w:tc><w:p><w:r><w:t>f</w:t></w:r></w:p></w:tc></w:tr>"
            '<w:tr><w:tc><w:tcPr><w:gridSpan w:val="0"/></w:tcPr><w:p><w:r><w:t>zero</w:t></w:r></w:p></w:tc>'
            '<w:tc><w:p><w:r><w:t>g</w:t></w:r></w:p></w:tc><w:tc><w:tcPr><w:vMerge w:val="continue"/></w:tcPr>'
            "<w:p/></w:tc><w:tc><w:p><w:r><w:t>h</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
        ),
    )
    document.add_paragraph("After the tables.")
    return _saved(document)


def without_styles_part() -> bytes:
    return _repackaged(
        headings_of_every_level(),
        lambda members: _without_part(members, "word/styles.xml", "word/_rels/document.xml.rels", "styles"),
    )


def _move_main_part(members: dict[str, bytes]) -> None:
    """The main part renamed, named by an absolute target; its styles named by a target with `..`."""
    members["word/main.xml"] = members.pop("word/document.xml")
    rels = members.pop("word/_rels/document.xml.rels")
    members["word/_rels/main.xml.rels"] = rels.replace(b'Target="styles.xml"', b'Target="../word/styles.xml"')
    members["_rels/.rels"] = members["_rels/.rels"].replace(b'Target="word/document.xml"', b'Target="/word/main.xml"')
    types = members["[Content_Types].xml"]
    members["[Content_Types].xml"] = types.replace(b'PartName="/word/document.xml"', b'PartName="/word/main.xml"')


DOCUMENTS = {
    "runs and hyperlinks": runs_and_hyperlinks,
    "headings of every level": headings_of_every_level,
    "custom and odd styles": custom_and_odd_styles,
    "a heading as the default style": a_heading_as_the_default_style,
    "merged tables": merged_tables,
    "no styles part": without_styles_part,
    "sample with a core title": lambda: samples.docx_file(
        "Heading title", [("Section", "text")], table=[["a", "b"], ["c", "d"]], core_title="Properties title"
    ),
    "sample without a core title": lambda: samples.docx_file("Heading title", [("Section", "text")]),
    "empty": lambda: _saved(docx.Document()),
}


@pytest.mark.parametrize("make", DOCUMENTS.values(), ids=DOCUMENTS.keys())
def test_the_reader_gives_what_python_docx_gave(make: Callable[[], bytes]) -> None:
    data = make()
    assert extract(media_types.DOCX, data) == python_docx_extract(_unwrapped(data))


# Random bodies that mix what the text rules tell apart: run content, wrappers, style ids, merged cells.
_TEXT = st.text(alphabet="ab é中 <&>\t", min_size=1, max_size=6).map(xml_escape)
_RUN_ITEM = st.one_of(
    _TEXT.map(lambda text: f"<w:t>{text}</w:t>"),
    _TEXT.map(lambda text: f'<w:t xml:space="preserve"> {text} </w:t>'),
    st.sampled_from(["<w:tab/>", "<w:ptab/>", "<w:cr/>", "<w:noBreakHyphen/>", "<w:t/>", "<w:rPr><w:b/></w:rPr>"]),
    st.sampled_from(["<w:br/>", '<w:br w:type="page"/>', '<w:br w:type="column"/>', '<w:br w:type="textWrapping"/>']),
    _TEXT.map(lambda text: f"<w:delText>{text}</w:delText>"),
)
_RUN = st.lists(_RUN_ITEM, max_size=4).map(lambda items: f"<w:r>{''.join(items)}</w:r>")
_RUNS = st.lists(_RUN, max_size=3).map("".join)
_STYLE_IDS = [
    "Title",
    "Heading1",
    "Heading2",
    "Heading9",
    "Normal",
    "ListParagraph",
    "Missing",
    "DefaultParagraphFont",
    "",
]
_INLINE_WRAPPERS = [
    *(f"<w:{tag}>{{}}</w:{tag}>" for tag in ("ins", "moveTo", "smartTag", "customXml", "fldSimple")),
    "<w:sdt><w:sdtPr/><w:sdtContent>{}</w:sdtContent></w:sdt>",
]
_PARAGRAPH = st.builds(
    lambda style, parts: f"<w:p>{style}{''.join(parts)}</w:p>",
    st.one_of(st.just(""), st.sampled_from(_STYLE_IDS).map(lambda id_: f'<w:pPr><w:pStyle w:val="{id_}"/></w:pPr>')),
    st.lists(
        st.one_of(
            _RUN,
            _RUNS.map(lambda runs: f"<w:hyperlink>{runs}</w:hyperlink>"),
            st.builds(lambda wrapper, runs: wrapper.format(runs), st.sampled_from(_INLINE_WRAPPERS), _RUNS),
        ),
        max_size=4,
    ),
)
_MERGES = ["", "", "", '<w:vMerge w:val="restart"/>', "<w:vMerge/>", '<w:vMerge w:val="continue"/>']


def _row(merges: list[str]) -> st.SearchStrategy[str]:
    cell = st.builds(
        lambda span, merge, paragraphs: f"<w:tc><w:tcPr>{span}{merge}</w:tcPr>{''.join(paragraphs)}</w:tc>",
        st.sampled_from(["", "", '<w:gridSpan w:val="2"/>', '<w:gridSpan w:val="3"/>']),
        st.sampled_from(merges),
        st.lists(_PARAGRAPH, min_size=1, max_size=2),
    )
    return st.builds(
        lambda before, cells: f"<w:tr>{before}{''.join(cells)}</w:tr>",
        st.sampled_from(["", "", '<w:trPr><w:gridBefore w:val="1"/></w:trPr>']),
        st.lists(cell, min_size=1, max_size=4),
    )


_TABLE = st.builds(
    lambda first, rows: f"<w:tbl><w:tblPr/><w:tblGrid>{'<w:gridCol/>' * 4}</w:tblGrid>{first}{''.join(rows)}</w:tbl>",
    _row(_MERGES[:4]),  # a first row that continues a merge from above would make python-docx refuse the file
    st.lists(_row(_MERGES), max_size=3),
)
_CONTROL = st.lists(st.one_of(_PARAGRAPH, _TABLE), max_size=2).map(
    lambda blocks: f"<w:sdt><w:sdtContent>{''.join(blocks)}</w:sdtContent></w:sdt>"
)
_BODY = st.lists(st.one_of(_PARAGRAPH, _TABLE, _CONTROL), max_size=6).map("".join)
_STYLED = samples.docx_file("t", [("h", "p")])


@settings(max_examples=100, deadline=None)
@given(body=_BODY)
def test_generated_bodies_read_as_python_docx_read_them_unwrapped(body: str) -> None:
    document = f"<w:document {W_DECL}><w:body>{body}<w:sectPr/></w:body></w:document>".encode()
    data = _repackaged(_STYLED, lambda members: members.update({"word/document.xml": document}))
    extracted = extract(media_types.DOCX, data)
    try:
        expected = python_docx_extract(_unwrapped(data))
    except ValueError as exc:  # a merge continuation with no cell above: python-docx refused the file
        assert "above" in str(exc) or "grid_offset" in str(exc)
        return
    assert extracted == expected


def test_run_content_becomes_tabs_breaks_and_hyphens() -> None:
    text = extract(media_types.DOCX, runs_and_hyperlinks()).text
    assert "tabthen\tline\npagecolumnset as text:\tafter tab\nafter newline\nno-break\t  spaced  \nend" in text
    assert "see the link\ttext and after." in text
    assert "kept, inside w:insinside w:smartTaginside w:fldSimpleinside w:customXmlalso kept" in text
    assert "in a content control" in text
    assert text.endswith("Ünïcödé — 中文 ✓\n\nheader text, after the body\n\nfooter text, after the header")
    assert "deleted" not in text


def test_styles_resolve_by_id_to_names_and_fall_back_to_the_default() -> None:
    extracted = extract(media_types.DOCX, custom_and_odd_styles())
    assert extracted.title == "A custom Heading 12"
    assert extracted.text.split("\n\n") == [
        "First, unstyled.",
        "In a custom style whose id is SummaryBlock",
        "###### A custom Heading 12",
        "## Localized heading two",
        "Names a style that does not exist",
        "Names a character style",
        "Names an empty style id",
        "Stale id after the rename",
    ]
    default_heading = extract(media_types.DOCX, a_heading_as_the_default_style())
    assert default_heading.text.split("\n\n") == [
        "#### Unstyled, so in the default style: Heading 4",
        "# Explicitly a Title",
    ]


def test_merged_cells_show_once_and_continuations_show_the_cell_above() -> None:
    blocks = extract(media_types.DOCX, merged_tables()).text.split("\n\n")
    assert blocks[1].splitlines() == [
        "r0c0 r0c1 | r0c2 | r0c3",  # merging moved the right cell's text into the left
        "r1c0 second paragraph in the cell | r1c1 | r1c2 | r1c3 r2c3 r3c3",
        "r2c0 r2c1 r3c0 r3c1 | r2c2 | r1c3 r2c3 r3c3",
        "r2c0 r2c1 r3c0 r3c1 | r3c2 | r1c3 r2c3 r3c3",
    ]
    assert blocks[2] == "same | same | other"  # equal neighbours keep their columns
    assert blocks[3].splitlines() == ["a | tall | c", "tall | f", "g | tall | h"]


def test_a_main_part_found_by_its_relationship_wherever_it_is() -> None:
    data = _repackaged(custom_and_odd_styles(), _move_main_part)
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        assert "word/document.xml" not in package.namelist()
    extracted = extract(media_types.DOCX, data)
    assert extracted == python_docx_extract(data)
    assert "## Localized heading two" in extracted.text


def test_a_core_properties_title_unset_or_absent_leaves_the_first_heading() -> None:
    unset = samples.docx_file("Heading title", [("Section", "text")])
    assert extract(media_types.DOCX, unset).title == "Heading title"
    absent = _repackaged(
        unset, lambda members: _without_part(members, "docProps/core.xml", "_rels/.rels", "core-properties")
    )
    assert extract(media_types.DOCX, absent).title == "Heading title"
    # Where python-docx differed: with no core properties part it made one up, titled "Word Document".
    assert python_docx_extract(absent).title == "Word Document"


def test_a_template_or_macro_enabled_document_is_read_too() -> None:
    main = b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
    macro_enabled = b"application/vnd.ms-word.document.macroEnabled.main+xml"
    data = _repackaged(
        samples.docx_file("Macros", [("Section", "text")]),
        lambda members: members.update(
            {"[Content_Types].xml": members["[Content_Types].xml"].replace(main, macro_enabled)}
        ),
    )
    assert extract(media_types.DOCX, data).text == "# Macros\n\n# Section\n\ntext"
    with pytest.raises(ValueError, match="is not a Word file"):  # python-docx refused it by its content type
        python_docx_extract(data)


def test_a_styles_part_is_parsed_once_per_distinct_content(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    parse = word_package.parse

    def counting_parse(part: Part) -> etree._Element:
        parsed.append(part.name)
        return parse(part)

    monkeypatch.setattr(word_package, "parse", counting_parse)
    monkeypatch.setattr(word_styles, "_remembered", {})
    first, again = (extract(media_types.DOCX, headings_of_every_level()) for _ in range(2))
    other = extract(media_types.DOCX, a_heading_as_the_default_style())
    styles_parsed = [name for name in parsed if name == "word/styles.xml"]
    assert styles_parsed == ["word/styles.xml", "word/styles.xml"]  # the second document's came from memory
    assert first == again
    assert other.text.startswith("#### Unstyled")


def test_a_merge_continuation_with_nothing_above_shows_its_own_text() -> None:
    document = docx.Document()
    document.element.body.insert(
        -1,
        parse_xml(
            f"<w:tbl {W_DECL}><w:tblPr/><w:tblGrid><w:gridCol/></w:tblGrid><w:tr><w:tc><w:tcPr><w:vMerge/></w:tcPr>"
            "<w:p><w:r><w:t>orphan</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
        ),
    )
    data = _saved(document)
    assert extract(media_types.DOCX, data).text == "orphan"
    with pytest.raises(ValueError, match="no tr above"):  # python-docx refused the whole file
        python_docx_extract(data)


@pytest.mark.parametrize(
    ("member", "content", "reason"),
    [
        ("word/document.xml", b"<w:document", "word/document.xml is not well-formed XML"),
        ("word/styles.xml", b"<w:styles><w:style></w:styles>", "word/styles.xml is not well-formed XML"),
        ("docProps/core.xml", b"\xff\xfe not xml", "docProps/core.xml is not well-formed XML"),
        ("_rels/.rels", b"", "_rels/.rels is not well-formed XML"),
        ("word/document.xml", None, "main document part word/document.xml is missing"),
        ("word/document.xml", f"<w:body {W_DECL}/>".encode(), "not a w:document with a body"),
        ("word/document.xml", f"<w:document {W_DECL}/>".encode(), "not a w:document with a body"),
    ],
)
def test_a_broken_part_is_a_corrupt_file(member: str, content: bytes | None, reason: str) -> None:
    def edit(members: dict[str, bytes]) -> None:
        if content is None:
            del members[member]
        else:
            members[member] = content

    data = _repackaged(samples.docx_file("t", [("h", "p")]), edit)
    with pytest.raises(CorruptFile) as raised:
        extract(media_types.DOCX, data)
    assert raised.value.reason.startswith("not a readable DOCX file: ")
    assert reason in raised.value.reason


def test_entities_are_not_expanded_nor_files_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("zebrafinch secret")
    document = (
        f'<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY leak SYSTEM "{secret.as_uri()}">'
        '<!ENTITY lol "lol"><!ENTITY lols "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
        f"<w:document {W_DECL}><w:body><w:p><w:r><w:t>before &leak; &lols; after</w:t></w:r></w:p>"
        "<w:p><w:r><w:t>second paragraph</w:t></w:r></w:p></w:body></w:document>"
    ).encode()
    data = _repackaged(
        samples.docx_file("t", [("h", "p")]), lambda members: members.update({"word/document.xml": document})
    )
    text = extract(media_types.DOCX, data).text
    assert "second paragraph" in text
    assert "zebrafinch" not in text
    assert "lol" not in text


def test_reading_a_docx_does_not_load_python_docx() -> None:
    data = samples.docx_file("Loaded?", [("Section", "text")])
    script = (
        "import sys; from cortex_extractors import extract, media_types; "
        "print(extract(media_types.DOCX, sys.stdin.buffer.read()).title, 'docx' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], input=data, capture_output=True, check=True)  # noqa: S603
    assert done.stdout.decode().split() == ["Loaded?", "False"]


def test_table_cells_keep_their_columns_when_empty_or_equal_to_their_neighbour() -> None:
    """Before, a cell equal to the one before it was dropped, as python-docx's readers did: `a |  |  | b` read
    `a |  | b` and `Yes | Yes | No` read `Yes | No`, each value then under another column's heading."""
    table = [["Feature", "Basic", "Pro", "Notes"], ["a", "", "", "b"], ["SSO", "Yes", "Yes", "No"], ["", "", "", ""]]
    text = extract(media_types.DOCX, samples.docx_file("Plans", [("Compare", "text")], table=table)).text
    rows = ["Feature | Basic | Pro | Notes", "a |  |  | b", "SSO | Yes | Yes | No"]  # the empty row is none
    assert text.split("\n\n")[-1].splitlines() == rows
