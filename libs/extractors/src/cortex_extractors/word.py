"""DOCX: paragraphs in document order, Title and Heading N styles as `#` lines, tables as ` | ` rows."""

import io

from docx import Document
from docx.table import Table
from docx.text.paragraph import Paragraph

from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import MAX_PARSED_PART_BYTES, BoundedText, short_title
from cortex_extractors.media_types import DOCX
from cortex_extractors.office_package import check_package


def heading_level(paragraph: Paragraph) -> int:
    """1 for the Title style, N for `Heading N`, 0 for body text."""
    name = (paragraph.style.name if paragraph.style is not None else None) or ""
    if name == "Title":
        return 1
    level = name.removeprefix("Heading ").strip()
    return int(level) if name.startswith("Heading ") and level.isdigit() else 0


def table_rows(table: Table) -> list[str]:
    rows = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if not cells or text != cells[-1]:  # a merged cell is repeated once per grid column
                cells.append(text)
        rows.append(" | ".join(cells))
    return rows


class WordExtractor:
    media_types = frozenset({DOCX})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        check_package(data, "DOCX", max_part_bytes=MAX_PARSED_PART_BYTES)
        document = Document(io.BytesIO(data))
        out = BoundedText()
        first_heading = None
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                out.add_lines(table_rows(block))
                continue
            level = heading_level(block)
            if level:
                out.heading(level, block.text)
                first_heading = first_heading or short_title(block.text)
            else:
                out.add(block.text)
        title = short_title(document.core_properties.title) or first_heading
        return Extracted(title=title, text=out.text())


extractor = WordExtractor()
