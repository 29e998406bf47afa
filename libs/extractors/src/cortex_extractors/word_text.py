"""Paragraph and table text by python-docx 1.2's rules (`Paragraph.text`, `_Row.cells`, `_Cell.text`).

Only direct children count: runs nested in tracked changes, fields or content controls are left out,
as python-docx leaves them out.
"""

from collections.abc import Iterator

from lxml import etree

from cortex_extractors import wordml as w

RUN_CHARACTERS = {w.TAB: "\t", w.POSITIONAL_TAB: "\t", w.CARRIAGE_RETURN: "\n", w.NO_BREAK_HYPHEN: "-"}
RUN_CONTENT = (w.TEXT, w.BREAK, *RUN_CHARACTERS)


def _run_text(run: etree._Element, out: list[str]) -> None:
    for item in run.iterchildren(*RUN_CONTENT):
        if item.tag == w.TEXT:
            out.append(item.text or "")
        elif item.tag == w.BREAK:  # a line break; page and column breaks are no text
            out.append("\n" if item.get(w.TYPE, "textWrapping") == "textWrapping" else "")
        else:
            out.append(RUN_CHARACTERS[item.tag])


def paragraph_text(paragraph: etree._Element) -> str:
    out: list[str] = []
    for child in paragraph.iterchildren(w.RUN, w.HYPERLINK):
        for run in child.iterchildren(w.RUN) if child.tag == w.HYPERLINK else (child,):
            _run_text(run, out)
    return "".join(out)


def _number(parent: etree._Element, properties_tag: str, tag: str, default: int) -> int:
    """`parent/properties_tag/tag/@w:val` as an integer; `default` when absent or not a number
    (python-docx raised on one that is not a number)."""
    properties = parent.find(properties_tag)
    element = properties.find(tag) if properties is not None else None
    try:
        return int(element.get(w.VAL, "")) if element is not None else default
    except ValueError:
        return default


def _span(cell: etree._Element) -> int:
    return _number(cell, w.CELL_PROPERTIES, w.GRID_SPAN, 1)


def _continues_above(cell: etree._Element) -> bool:
    """A vertically merged cell below the first: `w:vMerge` whose val is absent or `continue`."""
    properties = cell.find(w.CELL_PROPERTIES)
    merge = properties.find(w.VERTICAL_MERGE) if properties is not None else None
    return merge is not None and merge.get(w.VAL, "continue") == "continue"


def _cell_at(row: etree._Element, offset: int) -> etree._Element | None:
    """The cell of `row` that starts at grid column `offset` (python-docx's `tc_at_grid_offset`)."""
    start = _number(row, w.ROW_PROPERTIES, w.GRID_BEFORE, 0)
    for cell in row.iterchildren(w.CELL):
        if start > offset:
            break
        if start == offset:
            return cell
        start += _span(cell)
    return None


def _row_cells(rows: list[etree._Element], index: int) -> Iterator[etree._Element]:
    """The cells whose text row `index` shows: a merged continuation shows the cell where its merge
    starts above. python-docx repeats a cell once per grid column it spans; the repeats would be
    dropped as duplicates, so each comes once here (none for a span below 1, as there)."""
    offset = _number(rows[index], w.ROW_PROPERTIES, w.GRID_BEFORE, 0)
    for cell in rows[index].iterchildren(w.CELL):
        shown, above = cell, index
        # python-docx raises where no cell starts above at this offset; here the last one found is shown.
        while _continues_above(shown) and above > 0 and (over := _cell_at(rows[above - 1], offset)) is not None:
            shown, above = over, above - 1
        if _span(shown) > 0:
            yield shown
        offset += _span(cell)


def _cell_text(cell: etree._Element) -> str:
    text = "\n".join(paragraph_text(paragraph) for paragraph in cell.iterchildren(w.PARAGRAPH))
    return " ".join(text.split())


def table_rows(table: etree._Element) -> list[str]:
    """One line a row: its cells' text, whitespace collapsed, joined by ` | `, consecutive repeats dropped."""
    rows = list(table.iterchildren(w.ROW))
    lines = []
    for index in range(len(rows)):
        cells: list[str] = []
        for cell in _row_cells(rows, index):
            text = _cell_text(cell)
            if not cells or text != cells[-1]:  # equal neighbours show once, as python-docx's repeats did
                cells.append(text)
        lines.append(" | ".join(cells))
    return lines
