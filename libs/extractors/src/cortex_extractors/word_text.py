"""Paragraph and table text by python-docx 1.2's rules (`Paragraph.text`, `_Row.cells`, `_Cell.text`),
plus the text python-docx left out: what content controls, tracked insertions, smart tags, custom XML
and simple fields wrap, and tables nested in cells. Deleted text (w:del, w:moveFrom) stays out.
"""

from collections.abc import Iterator

from lxml import etree

from cortex_extractors import wordml as w

RUN_CHARACTERS = {w.TAB: "\t", w.POSITIONAL_TAB: "\t", w.CARRIAGE_RETURN: "\n", w.NO_BREAK_HYPHEN: "-"}
RUN_CONTENT = (w.TEXT, w.BREAK, *RUN_CHARACTERS)
# Read through to their content; w:del and w:moveFrom are not among them, as what they hold is deleted.
WRAPPERS = frozenset(
    {
        w.CONTENT_CONTROL,
        w.CONTENT_CONTROL_CONTENT,
        w.CUSTOM_XML,
        w.SMART_TAG,
        w.HYPERLINK,
        w.INSERTED,
        w.MOVED_TO,
        w.SIMPLE_FIELD,
        w.DIRECTION,
        w.BIDI_OVERRIDE,
    }
)


def unwrapped(parent: etree._Element, *tags: str) -> Iterator[etree._Element]:
    """`parent`'s children with `tags` in document order, those inside `WRAPPERS` (at any depth) included.
    A stack of iterators rather than nested generators, so an element costs the same however deep it is;
    tags are matched here, as lxml matching a dozen of them per child took twice the time."""
    wanted = frozenset(tags)
    levels = [parent.iterchildren()]
    while levels:
        child = next(levels[-1], None)
        if child is None:
            levels.pop()
        elif child.tag in wanted:
            yield child
        elif child.tag in WRAPPERS:
            levels.append(child.iterchildren())


def blocks(container: etree._Element) -> Iterator[etree._Element]:
    """The paragraphs and tables of a body or a cell, in document order."""
    return unwrapped(container, w.PARAGRAPH, w.TABLE)


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
    for run in unwrapped(paragraph, w.RUN):
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
    once per grid column it spans, and its readers dropped the repeats; each comes once here
    (none for a span below 1, as there)."""
    above: dict[int, etree._Element] = {}  # grid column → the cell the previous row showed there
    for row in rows:
        shown_here: dict[int, etree._Element] = {}
        cells = []
        offset = _number(row, w.ROW_PROPERTIES, w.GRID_BEFORE, 0)
        for cell in unwrapped(row, w.CELL):
            # python-docx raised where no cell starts above at this column; here the cell shows itself.
            shown = above.get(offset, cell) if _continues_above(cell) else cell
            shown_here[offset] = shown
            if _span(shown) > 0:
                cells.append(shown)
            offset += _span(cell)
        above = shown_here
        yield cells


def _nested_table_text(table: etree._Element) -> str:
    """A table inside a cell: its cells' text apart by spaces, as ` | ` would split the outer row."""
    return "\n".join(" ".join(cells) for cells in _row_cells(table))


def _cell_text(cell: etree._Element) -> str:
    """Its paragraphs' and nested tables' text in document order, whitespace collapsed. The parser's
    depth limit (256 elements) keeps the recursion through nested tables shallow."""
    parts = (_nested_table_text(block) if block.tag == w.TABLE else paragraph_text(block) for block in blocks(cell))
    return " ".join("\n".join(parts).split())


def _row_cells(table: etree._Element) -> Iterator[list[str]]:
    """Per row, its cells' text, every cell in its column: python-docx's readers dropped a cell equal to the
    one before, which shifted `Yes | Yes | No` and `a |  |  | b` out of their columns. A merged cell shows
    in every row it spans: its text is read once (a tall one holding a nested table would be read again for
    each row)."""
    read: dict[etree._Element, str] = {}
    for shown in _shown_cells(list(unwrapped(table, w.ROW))):
        cells: list[str] = []
        for cell in shown:
            if cell not in read:
                read[cell] = _cell_text(cell)
            cells.append(read[cell])
        yield cells


def table_rows(table: etree._Element) -> list[str]:
    """One line a row: its cells' text, whitespace collapsed, joined by ` | `; a row of empty cells is none."""
    return [" | ".join(cells) for cells in _row_cells(table) if any(cells)]
