"""DOCX: paragraphs in document order, Title and Heading N styles as `#` lines, tables as ` | ` rows.

The package's XML is read straight with lxml — only the main document, its styles and the core
properties — by the rules python-docx 1.2 applied when it did this work (`word_text`, `word_styles`),
for the same output, but for the text python-docx skipped and `word_text` reads (content controls,
tracked insertions, smart tags, nested tables…). python-docx parsed every XML part of the package.
On the 50 DOCX files of `bench.documents_mix` (python-docx's template, whose styles.xml is 350 KB),
CPU a file, best of 3: 10.2 ms with python-docx, 1.4 ms now, 7.3 ms when no file's styles part was
seen before (parsing styles.xml is most of that; `word_styles` parses each distinct one once).
"""

from cortex_extractors import wordml as w
from cortex_extractors.errors import CorruptFile
from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import MAX_PARSED_PART_BYTES, BoundedText, short_title
from cortex_extractors.media_types import DOCX
from cortex_extractors.office_package import check_package
from cortex_extractors.word_package import open_package
from cortex_extractors.word_styles import paragraph_styles, style_id_of
from cortex_extractors.word_text import blocks, paragraph_text, table_rows


def heading_level(name: str) -> int:
    """1 for the Title style, N for `Heading N`, 0 for body text (by the paragraph's style name)."""
    if name == "Title":
        return 1
    level = name.removeprefix("Heading ").strip()
    return int(level) if name.startswith("Heading ") and level.isdigit() else 0


class WordExtractor:
    media_types = frozenset({DOCX})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        check_package(data, "DOCX", max_part_bytes=MAX_PARSED_PART_BYTES)
        package = open_package(data)
        body = package.document.find(w.BODY) if package.document.tag == w.DOCUMENT else None
        if body is None:
            raise CorruptFile("not a readable DOCX file: its main part is not a w:document with a body")
        styles = paragraph_styles(package.styles)
        out = BoundedText()
        first_heading = None
        for block in blocks(body):
            if block.tag == w.TABLE:
                out.add_lines(table_rows(block))
                continue
            text = paragraph_text(block)
            level = heading_level(styles.name(style_id_of(block)))
            if level:
                out.heading(level, text)
                first_heading = first_heading or short_title(text)
            else:
                out.add(text)
        title = short_title(package.title) or first_heading
        return Extracted(title=title, text=out.text())


extractor = WordExtractor()
