"""Caps that keep one upload from exhausting the indexer: input size, pages, sheets, rows, output text."""

import unicodedata
from collections.abc import Iterable

from cortex_extractors.errors import TooLarge

MAX_INPUT_BYTES = 64 * 1024 * 1024
MAX_TEXT_CHARS = 1024 * 1024  # a document body's limit on the wire
MAX_PAGES = 2_000
MAX_SLIDES = 1_000
MAX_SHEETS = 100
MAX_ROWS_PER_SHEET = 100_000
MAX_ARCHIVE_MEMBERS = 10_000
MAX_UNPACKED_BYTES = 256 * 1024 * 1024
MAX_PARSED_PART_BYTES = 64 * 1024 * 1024  # an XML part a reader parses (DOCX/PPTX hold trees, XLSX shared strings)
MAX_TITLE_CHARS = 300
# The control characters that are not white space (C0, DEL, C1): a bell or an escape in a PDF's or DOCX's
# metadata is nothing to show. Those that are (tab, line and unit separators, NEL) part words, as spaces do.
_CONTROLS: dict[int, None] = dict.fromkeys(c for c in (*range(0x20), *range(0x7F, 0xA0)) if not chr(c).isspace())


def check_count(what: str, count: int, limit: int) -> None:
    if count > limit:
        raise TooLarge(f"the file has more than {limit:,} {what}")


class BoundedText:
    """Collects blocks of output text and refuses to grow past `MAX_TEXT_CHARS`."""

    def __init__(self, limit: int = MAX_TEXT_CHARS) -> None:
        self._blocks: list[str] = []
        self._size = 0
        self._limit = limit

    def add(self, block: str) -> None:
        """One paragraph (or table, or list). NUL characters go: PostgreSQL text cannot hold them."""
        block = block.replace("\x00", "").strip()
        if not block:
            return
        self._grow(len(block) + 2)
        self._blocks.append(block)

    def add_lines(self, lines: Iterable[str]) -> None:
        """One block of lines (a sheet's rows), checking the cap line by line, not after the fact."""
        kept: list[str] = []
        for raw in lines:
            line = raw.replace("\x00", "").strip()
            if line:
                self._grow(len(line) + 1)
                kept.append(line)
        if kept:
            self._blocks.append("\n".join(kept))
            self._size += 1

    def _grow(self, size: int) -> None:
        self._size += size
        if self._size > self._limit:
            raise TooLarge(f"the extracted text is over {self._limit:,} characters")

    def heading(self, level: int, title: str) -> None:
        title = " ".join(title.split())
        if title:
            self.add(f"{'#' * min(max(level, 1), 6)} {title}")

    def text(self) -> str:
        return "\n\n".join(self._blocks)


def short_title(title: str | None, *, placeholders: frozenset[str] = frozenset()) -> str | None:
    """One line without control characters, at most `MAX_TITLE_CHARS`; None when nothing is left but format
    characters (zero-width spaces, joiners: nothing to see), or when it is one of `placeholders` (in any
    case): the title a generator gives every new file, which names none of them."""
    if title is None:
        return None
    flat = " ".join(title.translate(_CONTROLS).split())
    if flat.casefold() in placeholders or all(char == " " or unicodedata.category(char) == "Cf" for char in flat):
        return None
    return flat[:MAX_TITLE_CHARS]
