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


def _shown_cells(rows: list[etree._Element]) -> Iterator[list[etree._Element]]:
    """Per row, the cells whose text it shows: a merged continuation shows the cell where its merge
    starts above (python-docx walked up row by row for each; here each row remembers what it showed at
    each grid column, so a tall merged table costs one pass, not rows × rows). python-docx repeats a cell
    once per grid column it spans; the repeats would be dropped as duplicates, so each comes once here
    (none for a span below 1, as there)."""
    above: dict[int, etree._Element] = {}  # grid column → the cell the previous row showed there
    for row in rows:
        shown_here: dict[int, etree._Element] = {}
        cells = []
        offset = _number(row, w.ROW_PROPERTIES, w.GRID_BEFORE, 0)
        for cell in row.iterchildren(w.CELL):
            # python-docx raised where no cell starts above at this column; here the cell shows itself.
            shown = above.get(offset, cell) if _continues_above(cell) else cell
            shown_here[offset] = shown
            if _span(shown) > 0:
                cells.append(shown)
            offset += _span(cell)
        above = shown_here
        yield cells


def _cell_text(cell: etree._Element) -> str:
    text = "\n".join(paragraph_text(paragraph) for paragraph in cell.iterchildren(w.PARAGRAPH))
    return " ".join(text.split())


def table_rows(table: etree._Element) -> list[str]:
    """One line a row: its cells' text, whitespace collapsed, joined by ` | `, consecutive repeats dropped."""
    lines = []
    for shown in _shown_cells(list(table.iterchildren(w.ROW))):
        cells: list[str] = []
        for cell in shown:
            text = _cell_text(cell)
            if not cells or text != cells[-1]:  # equal neighbours show once, as python-docx's repeats did
                cells.append(text)
        lines.append(" | ".join(cells))
    return lines
