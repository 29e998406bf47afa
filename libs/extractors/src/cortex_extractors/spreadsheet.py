"""XLSX: one `#` section per sheet, each non-empty row a line of its non-empty cells' values, ` | ` between.

The workbook is read in openpyxl's streaming (read-only) mode, with cached values instead of formulas. Its
rows are taken from openpyxl's sheet parser as they are stored, cells only: the read-only sheet's own rows
are padded with None up to their last cell, so a sheet of 100,000 rows with a cell in column XFD (16,384)
took ~25 s to read for ~2 MB of text.

Hidden sheets (`state="hidden"` or `"veryHidden"` in workbook.xml) are left out: a reader opening the workbook
does not see them, and what they mostly hold is helper data (drop-down lists, lookup tables, intermediate
sums; a veryHidden one can be shown by code only) whose words would match searches the workbook does not answer.
Hidden rows and columns are read: they are mostly rows a filter or an outline hides, the sheet's own data, and
leaving them out would index whatever filter the workbook was last saved with.
"""

import io
from collections.abc import Iterator, Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from openpyxl import load_workbook
from openpyxl.worksheet._read_only import ReadOnlyWorksheet
from openpyxl.worksheet._reader import WorkSheetParser

from cortex_extractors.cell_formats import Shown, as_shown, shown_parts
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

HIDDEN_STATES = frozenset({"hidden", "veryHidden"})
LAST_ROW = 1_048_576  # a sheet's last row: Excel opens no file with rows past it
POSITIONAL_BELOW = 1e21  # whole numbers are written out in digits below it (as JavaScript prints numbers)


def number_text(value: float) -> str:
    """The shortest repr of `value`; a whole number in its digits, without `.0` or exponent: `1E+16` as
    10000000000000000, and Excel's `1.23456789012346E+18` (it keeps 15 digits) as 1234567890123460000, not
    as the float's exact value, 1234567890123460096, whose last digits are binary rounding."""
    if not value.is_integer() or abs(value) >= POSITIONAL_BELOW:
        return repr(value)
    return format(Decimal(repr(value)).normalize(), "f") if value else "0"


def duration_text(value: timedelta) -> str:
    """An elapsed time (a `[h]:mm` cell) as hours:minutes:seconds, the hours counted on past 24: 30:15:00,
    not Python's `1 day, 6:15:00`; -12:00:00, not `-1 day, 12:00:00`."""
    microseconds = abs(value) // timedelta(microseconds=1)
    seconds, fraction = divmod(microseconds, 1_000_000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    text = f"{'-' if value < timedelta(0) else ''}{hours}:{minutes:02}:{seconds:02}"
    return f"{text}.{fraction:06}".rstrip("0") if fraction else text


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return number_text(value)
    if isinstance(value, datetime) and value.time() == time(0):
        return value.date().isoformat()  # a date cell: Excel stores dates as datetimes at midnight
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return duration_text(value)
    return " ".join(str(value).split())


def stored_rows(sheet: ReadOnlyWorksheet, shown: Mapping[int, Shown] | None = None) -> Iterator[tuple[int, list[Any]]]:
    """(row number, the values of the cells it stores) for each row of the sheet's XML, in order; a datetime
    cut to the part its format shows, by `shown` (`cell_formats.shown_parts`)."""
    # openpyxl's private parts (as its read-only sheet uses them), which its stubs leave out: pinned by tests.
    workbook = sheet.parent
    with sheet._get_source() as source:  # type: ignore[attr-defined]
        parser = WorkSheetParser(
            source,
            sheet._shared_strings,  # type: ignore[attr-defined]
            data_only=workbook.data_only,
            epoch=workbook.epoch,
            date_formats=workbook._date_formats,  # type: ignore[attr-defined]
            timedelta_formats=workbook._timedelta_formats,  # type: ignore[attr-defined]
        )
        for number, cells in parser.parse():
            if shown:
                yield number, [as_shown(cell["value"], shown.get(cell["style_id"])) for cell in cells]
            else:
                yield number, [cell["value"] for cell in cells]


def row_lines(rows: Iterator[tuple[int, list[Any]]], sheet: str) -> Iterator[str]:
    """A line per row that holds something: gaps in a sparse sheet are not rows, and only rows with cells
    count against the cap."""
    with_cells = 0
    for number, values in rows:
        if number > LAST_ROW:
            raise CorruptFile(f"not a valid XLSX file: sheet {sheet!r} has rows past row {LAST_ROW:,}")
        if not values:
            continue
        with_cells += 1
        if with_cells > MAX_ROWS_PER_SHEET:
            raise TooLarge(f"sheet {sheet!r} has more than {MAX_ROWS_PER_SHEET:,} rows")
        # Only the cells that hold something: an empty one has no words, and a row of them as separators
        # would grow with the gap between two cells (up to 16,383 columns), not with what the row says.
        # Column positions are lost either way (one separator for a run of empties would not keep them).
        cells = [text for value in values if value is not None and (text := cell_text(value))]
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
            shown = shown_parts(workbook)
            for sheet in workbook.worksheets:
                if sheet.sheet_state in HIDDEN_STATES:
                    continue
                out.heading(1, sheet.title)
                out.add_lines(row_lines(stored_rows(sheet, shown), sheet.title))
            return Extracted(title=short_title(workbook.properties.title), text=out.text())
        finally:
            workbook.close()


extractor = SpreadsheetExtractor()
