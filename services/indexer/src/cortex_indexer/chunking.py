"""Split markdown or plain text into passages: heading-aware, paragraph-aware, word-bounded, overlapping.

A passage carries its heading path ("Title › Section › Subsection") so that both the lexical and the
dense index see what it is about. all-MiniLM-L6-v2 reads at most 256 word pieces, so passages stay
well under that.
"""

import hashlib
import re
from dataclasses import dataclass

MAX_WORDS = 160
OVERLAP_WORDS = 30
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    heading: str
    text: str

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(f"{self.heading}\n{self.text}".encode()).hexdigest()

    def embedding_input(self) -> str:
        return f"{self.heading}\n\n{self.text}"


def _sections(body: str) -> list[tuple[list[str], list[str]]]:
    """(heading path, paragraphs) per section; headings inside code fences are text."""
    sections: list[tuple[list[str], list[str]]] = []
    path: list[str] = []
    paragraphs: list[str] = []
    current: list[str] = []
    in_fence = False

    def end_paragraph() -> None:
        if current:
            paragraphs.append("\n".join(current).strip())
            current.clear()

    for line in body.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        heading = None if in_fence else HEADING.match(line)
        if heading:
            end_paragraph()
            if paragraphs:
                sections.append((list(path), list(paragraphs)))
                paragraphs.clear()
            level = len(heading.group(1))
            path = [*path[: level - 1], heading.group(2)]
        elif not line.strip() and not in_fence:
            end_paragraph()
        else:
            current.append(line)
    end_paragraph()
    if paragraphs:
        sections.append((path, paragraphs))
    return sections


def _windows(words: list[str]) -> list[str]:
    """Split an over-long run of words into overlapping windows."""
    step = MAX_WORDS - OVERLAP_WORDS
    return [" ".join(words[start : start + MAX_WORDS]) for start in range(0, max(len(words) - OVERLAP_WORDS, 1), step)]


def _pack(paragraphs: list[str]) -> list[str]:
    """Greedily pack whole paragraphs into passages of at most MAX_WORDS words."""
    passages: list[str] = []
    current: list[str] = []
    size = 0
    for paragraph in paragraphs:
        words = paragraph.split()
        if len(words) > MAX_WORDS:
            if current:
                passages.append("\n\n".join(current))
                current, size = [], 0
            passages.extend(_windows(words))
            continue
        if size + len(words) > MAX_WORDS and current:
            passages.append("\n\n".join(current))
            # Overlap only as far as the next paragraph leaves room: no passage exceeds MAX_WORDS.
            room = min(OVERLAP_WORDS, MAX_WORDS - len(words))
            tail = current[-1].split()[-room:] if size > OVERLAP_WORDS and room > 0 else []
            current, size = ([" ".join(tail)] if tail else []), len(tail)
        current.append(paragraph)
        size += len(words)
    if current:
        passages.append("\n\n".join(current))
    return passages


def chunk_document(title: str, body: str) -> list[Chunk]:
    """Passages of a document; a document with an empty body still gets one passage (its title)."""
    chunks: list[Chunk] = []
    for path, paragraphs in _sections(body):
        heading = " › ".join([title, *path])
        for text in _pack(paragraphs):
            chunks.append(Chunk(ordinal=len(chunks), heading=heading, text=text))
    return chunks or [Chunk(ordinal=0, heading=title, text="")]
