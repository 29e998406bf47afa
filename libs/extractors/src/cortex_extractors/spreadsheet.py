"""XLSX: one `#` section per sheet, each non-empty row a line of its non-empty cells' values, ` | ` between.

The workbook is read in openpyxl's streaming (read-only) mode, with cached values instead of formulas.
"""

import io
from collections.abc import Iterator
from datetime import date, datetime, time
from typing import Any

from openpyxl import load_workbook

from cortex_extractors.errors import CorruptFile, TooLarge
from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import (
    MAX_PARSED_PART_BYTES,
    MAX_ROWS_PER_SHEET,
    MAX_SHEETS,
    BoundedText,
    check_count,
    short_title,
)
from cortex_extractors.media_types import XLSX
from cortex_extractors.office_package import check_package

LAST_ROW = 1_048_576  # a sheet's last row: Excel opens no file with rows past it


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return " ".join(str(value).split())


def row_lines(rows: Iterator[tuple[Any, ...]], sheet: str) -> Iterator[str]:
    """Rows come one per row number, the missing ones (gaps in a sparse sheet) empty: only rows with cells count."""
    with_cells = 0
    for number, row in enumerate(rows, 1):
        if number > LAST_ROW:  # else a row numbered in the billions would take as many empty rows to reach
            raise CorruptFile(f"not a valid XLSX file: sheet {sheet!r} has rows past row {LAST_ROW:,}")
        if not row:
            continue
        with_cells += 1
        if with_cells > MAX_ROWS_PER_SHEET:
            raise TooLarge(f"sheet {sheet!r} has more than {MAX_ROWS_PER_SHEET:,} rows")
        # Only the cells that hold something: an empty one has no words, and a row of them as separators
        # would grow with the gap between two cells (up to 16,383 columns), not with what the row says.
        # Column positions are lost either way (one separator for a run of empties would not keep them).
        # (openpyxl still pads the row with None up to its last cell: reading it, not its text, takes longer.)
        cells = [text for value in row if value is not None and (text := cell_text(value))]
        if cells:
            yield " | ".join(cells)


class SpreadsheetExtractor:
    media_types = frozenset({XLSX})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        check_package(data, "XLSX", max_part_bytes=MAX_PARSED_PART_BYTES)  # shared strings are held whole
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            check_count("sheets", len(workbook.sheetnames), MAX_SHEETS)
            out = BoundedText()
            for sheet in workbook.worksheets:
                sheet.reset_dimensions()  # the stored dimensions may be wrong; read every row there is
                out.heading(1, sheet.title)
                out.add_lines(row_lines(sheet.iter_rows(values_only=True), sheet.title))
            return Extracted(title=short_title(workbook.properties.title), text=out.text())
        finally:
            workbook.close()


extractor = SpreadsheetExtractor()
