"""XLSX cell values as text: numbers in their digits, as they are cached in the sheet's XML."""

import pytest

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
