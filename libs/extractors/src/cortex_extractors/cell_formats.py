"""What an XLSX cell's number format shows of a date serial: the time of day, the date, or both.

openpyxl reads a number under a date or time format as a datetime (as a time below 1), and keeps what the
format leaves out: `h:mm` over 1.75 (a timesheet's 42 hours, shown `18:00`) is 1900-01-01 18:00, and
`yyyy-mm-dd` over 45000.5 is 2023-03-15 12:00. An elapsed-time format (`[h]:mm`) it reads as a timedelta.
"""

import re
from datetime import datetime
from enum import Enum
from typing import Any

from openpyxl.styles.numbers import (
    BUILTIN_FORMATS_MAX_SIZE,
    STRIP_RE,
    builtin_format_code,
    is_date_format,
    is_timedelta_format,
)
from openpyxl.workbook import Workbook

DATE_TIME_CODES = re.compile(r"(?<![_\\])[dhsyDHSY]")  # as openpyxl reads them; `m` is months or minutes


class Shown(Enum):
    DATE = "date"
    TIME = "time"


def _format_code(workbook: Workbook, number_format_id: int) -> str | None:
    # openpyxl numbers a workbook's own formats from 164 up, in the order of its `_number_formats`.
    if number_format_id < BUILTIN_FORMATS_MAX_SIZE:
        return builtin_format_code(number_format_id)
    own: list[str] = workbook._number_formats  # type: ignore[attr-defined]
    index = number_format_id - BUILTIN_FORMATS_MAX_SIZE
    return own[index] if index < len(own) else None


def _shown(code: str | None) -> Shown | None:
    if not is_date_format(code) or is_timedelta_format(code):
        return None
    codes = {char.lower() for char in DATE_TIME_CODES.findall(STRIP_RE.sub("", code.split(";")[0]))}
    if not codes & {"h", "s"}:
        return Shown.DATE  # `d`, `y` or `m` alone: days, years, months
    if not codes & {"d", "y"}:
        return Shown.TIME
    return None


def shown_parts(workbook: Workbook) -> dict[int, Shown]:
    """Cell style id → the part of a datetime its number format shows, for formats that show one part only."""
    # openpyxl's cell styles, as its sheet parser indexes them (`style_id`), which its stubs leave out.
    styles: list[Any] = workbook._cell_styles  # type: ignore[attr-defined]
    parts = {style_id: _shown(_format_code(workbook, style.numFmtId)) for style_id, style in enumerate(styles)}
    return {style_id: part for style_id, part in parts.items() if part is not None}


def as_shown(value: Any, part: Shown | None) -> Any:
    """A datetime cut to the part its format shows (a time of day wraps at 24 hours, as Excel shows it);
    any other value as it is."""
    if part is None or not isinstance(value, datetime):
        return value
    return value.time() if part is Shown.TIME else value.date()
