"""XLSX: one `#` section per sheet, each non-empty row a line of ` | `-separated cell values.

The workbook is read in openpyxl's streaming (read-only) mode, with cached values instead of formulas.
"""

import io
from collections.abc import Iterator
from datetime import date, datetime, time
from typing import Any

from openpyxl import load_workbook

from cortex_extractors.errors import TooLarge
from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import MAX_ROWS_PER_SHEET, MAX_SHEETS, BoundedText, check_count, short_title
from cortex_extractors.media_types import XLSX
from cortex_extractors.office_package import check_package


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return " ".join(str(value).split())


def row_lines(rows: Iterator[tuple[Any, ...]], sheet: str) -> Iterator[str]:
    for number, row in enumerate(rows, 1):
        if number > MAX_ROWS_PER_SHEET:
            raise TooLarge(f"sheet {sheet!r} has more than {MAX_ROWS_PER_SHEET:,} rows")
        cells = [cell_text(value) for value in row]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            yield " | ".join(cells)


class SpreadsheetExtractor:
    media_types = frozenset({XLSX})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        check_package(data, "XLSX")
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
