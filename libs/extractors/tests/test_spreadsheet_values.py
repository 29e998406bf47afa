"""XLSX cell values as text: numbers in their digits, as they are cached in the sheet's XML; times, dates and
durations as their number formats show them."""

import io
from datetime import timedelta

import pytest
from openpyxl import Workbook

from cortex_extractors import extract, media_types, samples

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def _sheet_text(*values: str) -> str:
    """The text of a one-row sheet whose cells cache `values` as written (`<v>` text)."""
    cells = "".join(f"<c><v>{value}</v></c>" for value in values)
    sheet = f'<worksheet xmlns="{MAIN}"><sheetData><row r="1">{cells}</row></sheetData></worksheet>'.encode()
    text = extract(media_types.XLSX, samples.xlsx_with_parts({"xl/worksheets/sheet1.xml": sheet})).text
    return text.removeprefix("# S\n\n")


@pytest.mark.parametrize(
    ("cached", "text"),
    [
        ("1.23456789012346E+18", "1234567890123460000"),  # before: 1234567890123460096, binary rounding's digits
        ("9.87654321098765E+19", "98765432109876500000"),  # before: 98765432109876494336
        ("-4.4E+17", "-440000000000000000"),
        ("1E+16", "10000000000000000"),
        ("12345678901234.0", "12345678901234"),
        ("12345678901234", "12345678901234"),
        ("-0.0", "0"),
        ("0.25", "0.25"),
        ("4.5", "4.5"),
        ("1.5E-05", "1.5e-05"),  # not whole: its shortest repr
        ("1E+21", "1e+21"),  # a whole number past 20 digits keeps its exponent, not a run of zeros
    ],
)
def test_a_number_reads_as_its_digits(cached: str, text: str) -> None:
    assert _sheet_text(cached) == text


def _formatted_cell_text(value: float | timedelta, number_format: str) -> str:
    """The text of a sheet whose one cell holds `value` under `number_format`, as openpyxl writes it."""
    workbook = Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "S"
    sheet.cell(row=1, column=1, value=value).number_format = number_format
    out = io.BytesIO()
    workbook.save(out)
    return extract(media_types.XLSX, out.getvalue()).text.removeprefix("# S\n\n")


@pytest.mark.parametrize(
    ("value", "number_format", "text"),
    [
        (timedelta(hours=30, minutes=15), "[h]:mm", "30:15:00"),  # before: 1 day, 6:15:00
        (1.2604166666666667, "[h]:mm:ss", "30:15:00"),
        (2.5, "[hh]:mm", "60:00:00"),  # before: 2 days, 12:00:00
        (-0.5, "[h]:mm", "-12:00:00"),  # before: -1 day, 12:00:00
        (0.75, "[mm]:ss", "18:00:00"),
        (timedelta(seconds=90, milliseconds=250), "[h]:mm:ss.000", "0:01:30.25"),
        (1.75, "h:mm", "18:00:00"),  # before: 1900-01-01T18:00:00 (a timesheet's 42 hours, as Excel shows them)
        (3.5, "h:mm:ss AM/PM", "12:00:00"),  # before: 1900-01-02T12:00:00
        (45000.75, "[$-409]h:mm;@", "18:00:00"),  # before: 2023-03-15T18:00:00
        (45000.5, "yyyy-mm-dd", "2023-03-15"),  # before: 2023-03-15T12:00:00, a time its format does not show
        (45000.5, "d mmmm", "2023-03-15"),
        (45000.5, "yyyy-mm-dd hh:mm", "2023-03-15T12:00:00"),  # both shown: both kept
        (0.5, "h:mm", "12:00:00"),
        (0.5, '"hours" 0.00', "0.5"),  # a literal `h` in quotes: not a time
    ],
)
def test_a_time_or_duration_reads_as_its_format_shows_it(
    value: float | timedelta, number_format: str, text: str
) -> None:
    assert _formatted_cell_text(value, number_format) == text
