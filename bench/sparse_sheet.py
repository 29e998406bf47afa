"""XLSX extraction of a wide sparse sheet: Cortex's row reader against openpyxl's own read-only rows.

`python -m bench.sparse_sheet [--rows 50000]`

One sheet whose rows each hold a number in column A and one in XFD (the last column, 16,384), as a
generated export can. openpyxl's read-only rows are padded with None up to their last cell, so reading
such a row means building 16,384 values; Cortex reads the cells each row stores. Both read the same
bytes, alternately, three times each; the figure is the ratio of their median CPU seconds.
"""

import argparse
import io
import statistics
import time
from collections.abc import Callable

from openpyxl import load_workbook

from cortex_extractors import extract, media_types, samples

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def wide_sparse_sheet(rows: int) -> bytes:
    cells = "".join(
        f'<row r="{n}"><c r="A{n}"><v>{n}</v></c><c r="XFD{n}"><v>{n}</v></c></row>' for n in range(1, rows + 1)
    )
    sheet = f'<worksheet xmlns="{MAIN}"><sheetData>{cells}</sheetData></worksheet>'.encode()
    return samples.xlsx_with_parts({"xl/worksheets/sheet1.xml": sheet})


def cortex(data: bytes) -> int:
    return len(extract(media_types.XLSX, data).text)


def padded_rows(data: bytes) -> int:
    """What the extractor did before: openpyxl's read-only rows, values only."""
    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        sheet = workbook.worksheets[0]
        sheet.reset_dimensions()
        return sum(1 for row in sheet.iter_rows(values_only=True) if any(value is not None for value in row))
    finally:
        workbook.close()


def cpu_seconds(read: Callable[[bytes], int], data: bytes) -> float:
    started = time.process_time()
    read(data)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    args = parser.parse_args()
    data = wide_sparse_sheet(args.rows)
    ours, theirs = [], []
    for _ in range(3):
        ours.append(cpu_seconds(cortex, data))
        theirs.append(cpu_seconds(padded_rows, data))
    mine, padded = statistics.median(ours), statistics.median(theirs)
    print(f"{args.rows:,} rows (A and XFD), {len(data):,} bytes")
    print(f"Cortex's extractor: {mine:.2f} CPU-s (median of 3); openpyxl's padded rows alone: {padded:.2f}")
    print(f"ratio: {padded / mine:.1f}x less CPU")


if __name__ == "__main__":
    main()
