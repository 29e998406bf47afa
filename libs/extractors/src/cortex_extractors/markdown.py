"""Markdown passes through as it is; its first `# ` heading is the title."""

from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import short_title
from cortex_extractors.media_types import MARKDOWN
from cortex_extractors.plain_text import bounded, decode_text

TITLE_SEARCH_LINES = 50


def first_heading(text: str) -> str | None:
    for line in text.splitlines()[:TITLE_SEARCH_LINES]:
        if line.startswith("# "):
            return short_title(line[2:])
    return None


class MarkdownExtractor:
    media_types = frozenset({MARKDOWN, "text/x-markdown"})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        text = bounded(decode_text(data))
        return Extracted(title=first_heading(text), text=text)


extractor = MarkdownExtractor()
