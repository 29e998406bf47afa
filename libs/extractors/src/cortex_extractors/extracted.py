"""What an extractor returns, and what an extractor is (the `cortex.extractor` entry-point protocol)."""

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Extracted:
    """Markdown-ish text: headings as `#` lines where the format has them, paragraphs between blank lines."""

    title: str | None  # the document's own idea of its title, if it has one
    text: str


class Extractor(Protocol):
    """Registered under the entry-point group `cortex.extractor` as `name = "module:object"`."""

    @property
    def media_types(self) -> Collection[str]: ...

    def extract(self, data: bytes, filename: str | None) -> Extracted: ...
