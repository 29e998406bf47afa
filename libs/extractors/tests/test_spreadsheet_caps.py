"""XLSX caps: each XML part the reader parses is capped, and the row cap counts rows that hold cells."""

import io
from datetime import date, datetime, time

import pytest
from openpyxl import load_workbook

from cortex_extractors import CorruptFile, TooLarge, extract, media_types, samples, spreadsheet

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
SHARED_STRINGS_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"
SHEET_USING_SHARED_STRINGS = f'<worksheet xmlns="{MAIN}"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row>'


def _shared_strings(count: int) -> bytes:
    strings = b"".join(b"<si><t>s%d</t></si>" % n for n in range(count))
    return f'<sst xmlns="{MAIN}">'.encode() + strings + b"</sst>"


@pytest.mark.parametrize("name", ["xl/sharedStrings.xml", "xl/strings.bin"])  # readers find it by content type
def test_shared_strings_over_the_part_cap_are_refused(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    manifest = f'<Override PartName="/{name}" ContentType="{SHARED_STRINGS_TYPE}"/>'
    sheet = (SHEET_USING_SHARED_STRINGS + "</sheetData></worksheet>").encode()
    data = samples.xlsx_with_parts({name: _shared_strings(70_000), "xl/worksheets/sheet1.xml": sheet}, manifest)
    assert extract(media_types.XLSX, data).text == "# S\n\ns0"
    monkeypatch.setattr(spreadsheet, "MAX_PARSED_PART_BYTES", 1024 * 1024)
    with pytest.raises(TooLarge, match="the XLSX file has a part larger than 1 MiB"):
        extract(media_types.XLSX, data)


def test_a_worksheet_over_the_part_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spreadsheet, "MAX_PARSED_PART_BYTES", 1024 * 1024)
    rows = "".join(f'<row r="{n}"><c r="A{n}"><v>{n}</v></c></row>' for n in range(1, 40_000))
    sheet = f'<worksheet xmlns="{MAIN}"><sheetData>{rows}</sheetData></worksheet>'.encode()
    with pytest.raises(TooLarge, match="a part larger than 1 MiB"):
        extract(media_types.XLSX, samples.xlsx_with_parts({"xl/worksheets/sheet1.xml": sheet}))


def test_a_large_part_that_is_not_xml_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spreadsheet, "MAX_PARSED_PART_BYTES", 1024 * 1024)
    image = b"\x89PNG\r\n\x1a\n" + bytes(2 * 1024 * 1024)  # no reader parses it: only its size would count
    assert extract(media_types.XLSX, samples.xlsx_with_parts({"xl/media/image1.png": image})).text == "# S\n\na"


def test_a_sparse_sheet_counts_only_the_rows_that_hold_cells() -> None:
    data = samples.xlsx_file({"Sparse": [["top"], *[[]] * 149_998, ["bottom"]]})  # A1 and A150000
    assert extract(media_types.XLSX, data).text == "# Sparse\n\ntop\nbottom"


def test_a_row_past_the_last_row_of_a_sheet_is_corrupt() -> None:
    sheet = f'<worksheet xmlns="{MAIN}"><sheetData><row r="2000000000"><c><v>1</v></c></row></sheetData></worksheet>'
    with pytest.raises(CorruptFile, match="sheet 'S' has rows past row 1,048,576"):
        extract(media_types.XLSX, samples.xlsx_with_parts({"xl/worksheets/sheet1.xml": sheet.encode()}))


def test_a_row_shows_only_its_cells_that_hold_something() -> None:
    """Before: one ` | ` per empty cell between two filled ones, so 100 rows with cells in A and XFD (the last
    column) came to 4.9 million characters and the 6 KB file failed as too large."""
    rows = "".join(
        f'<row r="{n}"><c r="A{n}" t="inlineStr"><is><t>left {n}</t></is></c><c r="XFD{n}"><v>{n}</v></c></row>'
        for n in range(1, 101)
    )
    sheet = f'<worksheet xmlns="{MAIN}"><sheetData>{rows}</sheetData></worksheet>'.encode()
    text = extract(media_types.XLSX, samples.xlsx_with_parts({"xl/worksheets/sheet1.xml": sheet})).text
    assert text.splitlines()[:4] == ["# S", "", "left 1 | 1", "left 2 | 2"]
    assert len(text) < 2_000
    gaps = samples.xlsx_file({"Gaps": [["a", None, 0, "", "  ", False, None, "c"]]})
    assert extract(media_types.XLSX, gaps).text == "# Gaps\n\na | 0 | False | c"


def test_a_row_is_read_as_the_cells_it_stores_not_padded_to_its_last_column() -> None:
    """openpyxl's read-only rows are padded with None up to their last cell: a row with cells in A and XFD
    was 16,384 values, and a sheet of 100,000 such rows took ~25 s to read."""
    row = '<row r="7"><c r="A7" t="inlineStr"><is><t>left</t></is></c><c r="XFD7"><v>2</v></c></row>'
    sheet = f'<worksheet xmlns="{MAIN}"><sheetData>{row}</sheetData></worksheet>'.encode()
    workbook = load_workbook(io.BytesIO(samples.xlsx_with_parts({"xl/worksheets/sheet1.xml": sheet})), read_only=True)
    try:
        assert list(spreadsheet.stored_rows(workbook.worksheets[0])) == [(7, ["left", 2])]
    finally:
        workbook.close()


def test_a_date_cell_reads_as_a_date_and_a_moment_keeps_its_time() -> None:
    """Excel stores a date as a datetime at midnight: it read as `2024-03-01T00:00:00`."""
    cells = [date(2024, 3, 1), datetime(2024, 3, 1, 14, 30), time(9, 5)]
    data = samples.xlsx_file({"Dates": [cells]})
    assert extract(media_types.XLSX, data).text == "# Dates\n\n2024-03-01 | 2024-03-01T14:30:00 | 09:05:00"
