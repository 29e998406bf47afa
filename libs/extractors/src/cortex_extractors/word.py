"""DOCX: paragraphs in document order, Title and Heading N styles as `#` lines, tables as ` | ` rows, text
boxes right after the paragraph that anchors them; after the body, the footnotes and endnotes, then each
distinct header and footer text once (each section names its own, mostly the same).

The package's XML is read straight with lxml — the main document, its styles, notes, headers and footers,
and the core properties, no other part — by the rules python-docx 1.2 applied when it did this work
(`word_text`, `word_styles`), for the same output, but for the text python-docx skipped: what content
controls, tracked insertions, smart tags and nested tables hold (`word_text`), text boxes (`word_boxes`),
notes, headers and footers; and without the hidden text python-docx read (`word_hidden`). python-docx parsed
every XML part of the package. On the 50 DOCX files of `bench.documents_mix` (python-docx's template, whose
styles.xml is 350 KB; no notes, headers or footers), CPU a file, best of 3: 10.2 ms with python-docx, 1.4 ms
now, 7.3 ms when no file's styles part was seen before (parsing styles.xml is most of that; `word_styles`
parses each distinct one once). A note, header or footer part is one more read and parse, as cheap as its XML
is small.
"""

from lxml import etree

from cortex_extractors import wordml as w
from cortex_extractors.errors import CorruptFile
from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import MAX_PARSED_PART_BYTES, BoundedText, short_title
from cortex_extractors.media_types import DOCX
from cortex_extractors.office_package import check_package
from cortex_extractors.word_boxes import lift_text_boxes
from cortex_extractors.word_hidden import drop_hidden_runs
from cortex_extractors.word_package import open_package, parse, read_parts
from cortex_extractors.word_styles import ParagraphStyles, paragraph_styles, style_id_of
from cortex_extractors.word_text import blocks, paragraph_text, table_rows

NOTES = (w.FOOTNOTE, w.ENDNOTE)
NOTE_TYPES = frozenset({"normal"})  # the others are the separator lines between the body and the notes
# A core-properties title that names no document: python-docx's for a package saved without core properties.
# In lower case, as `short_title` compares them.
PLACEHOLDER_TITLES = frozenset({"word document"})


def heading_level(name: str) -> int:
    """1 for the Title style, N for `Heading N`, 0 for body text (by the paragraph's style name)."""
    if name == "Title":
        return 1
    level = name.removeprefix("Heading ").strip()
    return int(level) if name.startswith("Heading ") and level.isdigit() else 0


def _add_blocks(out: BoundedText, container: etree._Element, styles: ParagraphStyles | None) -> str | None:
    """Adds the paragraphs and tables of a body, note, header or footer; returns the first heading's text.
    Headings only with `styles`: in notes, headers and footers a paragraph is text, whatever its style."""
    first_heading = None
    for block in blocks(container):
        if block.tag == w.TABLE:
            out.add_lines(table_rows(block))
            continue
        text = paragraph_text(block)
        level = heading_level(styles.name(style_id_of(block))) if styles is not None else 0
        if level:
            out.heading(level, text)
            first_heading = first_heading or short_title(text)
        else:
            out.add(text)
    return first_heading


def _readable(root: etree._Element, styles: ParagraphStyles) -> etree._Element:
    """`root` with its hidden runs gone (a text box anchored in one with them) and its text boxes after their
    anchors: ready for `_add_blocks`."""
    drop_hidden_runs(root, styles)
    lift_text_boxes(root)
    return root


def _add_notes(out: BoundedText, notes: etree._Element, styles: ParagraphStyles) -> None:
    _readable(notes, styles)
    for note in notes.iterchildren(*NOTES):
        if note.get(w.TYPE, "normal") in NOTE_TYPES:
            _add_blocks(out, note, None)


def _part_text(root: etree._Element, styles: ParagraphStyles) -> str:
    """A header or footer as one block of text (capped as the body is; their sum is checked as they are added)."""
    out = BoundedText()
    _add_blocks(out, _readable(root, styles), None)
    return out.text()


class WordExtractor:
    media_types = frozenset({DOCX})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        check_package(data, "DOCX", max_part_bytes=MAX_PARSED_PART_BYTES)  # caps each part read below too
        package = open_package(data)
        body = package.document.find(w.BODY) if package.document.tag == w.DOCUMENT else None
        if body is None:
            raise CorruptFile("not a readable DOCX file: its main part is not a w:document with a body")
        styles = paragraph_styles(package.styles)
        out = BoundedText()
        first_heading = _add_blocks(out, _readable(body, styles), styles)
        for part in read_parts(data, package.notes):
            _add_notes(out, parse(part), styles)
        shown: set[str] = set()
        for part in read_parts(data, package.headers_and_footers):
            text = _part_text(parse(part), styles)
            if text not in shown:
                shown.add(text)
                out.add(text)
        return Extracted(
            title=short_title(package.title, placeholders=PLACEHOLDER_TITLES) or first_heading, text=out.text()
        )


extractor = WordExtractor()
