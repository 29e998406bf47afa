"""Markdown passes through as it is; the title is front matter's `title:`, else the first level-1 heading."""

import re

from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import short_title
from cortex_extractors.markdown_headings import (
    atx_heading,
    can_be_setext_text,
    front_matter_end,
    is_fence,
    setext_level,
)
from cortex_extractors.media_types import MARKDOWN
from cortex_extractors.plain_text import bounded, decode_text

TITLE_SEARCH_LINES = 50
DOUBLE_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
SINGLE_QUOTED = re.compile(r"'((?:[^']|'')*)'")  # '' is a quote within


def _front_matter_title(lines: list[str]) -> str | None:
    """Front matter's top-level `title:`: a quoted or plain scalar (a block scalar's `|` or `>` is no title)."""
    end = front_matter_end(lines)
    for line in lines[1 : end - 1] if end else ():
        key, colon, value = line.partition(":")
        if colon and key == "title":
            return _scalar(value.strip())
    return None


def _scalar(value: str) -> str | None:
    if value[:1] in ("|", ">"):
        return None
    if quoted := DOUBLE_QUOTED.match(value) or SINGLE_QUOTED.match(value):
        return quoted.group(1).replace("''", "'") if value[0] == "'" else quoted.group(1)
    return value.partition(" #")[0].strip()  # a plain scalar ends where a comment begins


def first_heading(text: str) -> str | None:
    lines = text.splitlines()
    if title := short_title(_front_matter_title(lines)):
        return title
    in_fence = False
    previous = ""  # the line before, when it can be a setext heading's text
    for line in lines[front_matter_end(lines) :][:TITLE_SEARCH_LINES]:
        heading = None if in_fence else atx_heading(line)
        if is_fence(line):
            in_fence, previous = not in_fence, ""
        elif heading:
            if heading[0] == 1:
                return short_title(heading[1])
            previous = ""
        elif not in_fence and previous and setext_level(line) == 1:
            return short_title(previous)
        else:
            previous = line if not in_fence and can_be_setext_text(line) else ""
    return None


class MarkdownExtractor:
    media_types = frozenset({MARKDOWN, "text/x-markdown"})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        text = bounded(decode_text(data))
        return Extracted(title=first_heading(text), text=text)


extractor = MarkdownExtractor()
