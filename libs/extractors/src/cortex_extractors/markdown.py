"""Markdown passes through as it is; the title is front matter's `title:`, else the first level-1 heading."""

from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import short_title
from cortex_extractors.markdown_headings import atx_heading, is_fence, setext_level
from cortex_extractors.media_types import MARKDOWN
from cortex_extractors.plain_text import bounded, decode_text

TITLE_SEARCH_LINES = 50
FRONT_MATTER = "---"
FRONT_MATTER_ENDS = ("---", "...")


def _front_matter(lines: list[str]) -> tuple[str | None, int]:
    """(its `title:`, the index of the first line after it); (None, 0) without front matter."""
    if not lines or lines[0].rstrip() != FRONT_MATTER:
        return None, 0
    title = None
    for index, line in enumerate(lines[1:], start=1):
        if line.rstrip() in FRONT_MATTER_ENDS:
            return title, index + 1
        key, colon, value = line.partition(":")
        if colon and key.strip() == "title" and title is None:
            title = value.strip().strip("\"'")
    return None, 0  # never closed: not front matter


def first_heading(text: str) -> str | None:
    lines = text.splitlines()[:TITLE_SEARCH_LINES]
    title, start = _front_matter(lines)
    if title := short_title(title):
        return title
    in_fence = False
    previous = ""
    for line in lines[start:]:
        if is_fence(line):
            in_fence = not in_fence
        elif not in_fence:
            heading = atx_heading(line)
            if heading and heading[0] == 1:
                return short_title(heading[1])
            if previous.strip() and setext_level(line) == 1:
                return short_title(previous)
        previous = "" if in_fence else line
    return None


class MarkdownExtractor:
    media_types = frozenset({MARKDOWN, "text/x-markdown"})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        text = bounded(decode_text(data))
        return Extracted(title=first_heading(text), text=text)


extractor = MarkdownExtractor()
