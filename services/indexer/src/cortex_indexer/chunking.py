"""Split markdown or plain text into passages: heading-aware, paragraph-aware, token-bounded, overlapping.

A passage carries its heading path ("Title › Section › Subsection") so that both the lexical and the
dense index see what it is about. all-MiniLM-L6-v2 reads at most 256 word pieces, so passages of words
stay well under that. The bound counts units: a word, a run of at most `MAX_UNIT_CHARS` characters of a
longer one, or one CJK character. Ordinary text is cut by its words (at 16 characters a unit, 61 of CISI's
1,460 documents were cut elsewhere); text without spaces (minified JSON, CJK) into passages of bounded
length, which the lexical index reads whole and the model by their start. Text is kept in Unicode NFC
so that a query matches however it was typed.
"""

import hashlib
import re
from dataclasses import dataclass

from cortex_contracts.base import is_blank, nfc
from cortex_extractors.markdown_headings import (
    atx_heading,
    can_be_setext_text,
    front_matter_end,
    is_fence,
    setext_level,
)

MAX_WORDS = 160
OVERLAP_WORDS = 30
MAX_UNIT_CHARS = 32
MAX_HEADING_CHARS = 200
MAX_SECTIONED_PASSAGES = 10_000  # a body at its 1 M character limit makes ~1,300 of English, ~7,700 of CJK
# Scripts written without spaces between words: Hangul Jamo, CJK radicals to ideographs (kana
# included), Hangul syllables, compatibility ideographs, full-width forms.
_WIDE = "\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
NAME_PART = re.compile(r"[^\W_]+")  # letters and digits: a file name's words
UNIT = re.compile(rf"(?!\s)[{_WIDE}]|[^\s{_WIDE}]{{1,{MAX_UNIT_CHARS}}}")  # the ideographic space is no unit


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


def _short(heading: str) -> str:
    return heading if len(heading) <= MAX_HEADING_CHARS else heading[: MAX_HEADING_CHARS - 1] + "…"


def _sections(body: str, *, headings: bool = True) -> list[tuple[list[str], list[str]]]:
    """(heading path, paragraphs) per section. Headings inside code fences and front matter are text; a
    heading too long for the path (`MAX_HEADING_CHARS`) is kept as text too, an ATX one also cut short as
    the section's heading, a setext one not made a heading at all."""
    sections: list[tuple[list[str], list[str]]] = []
    path: list[tuple[int, str]] = []  # (level, heading), levels increasing
    paragraphs: list[str] = []
    current: list[str] = []
    in_fence = False

    def end_paragraph() -> None:
        if current:
            paragraphs.append("\n".join(current).strip())
            current.clear()

    unsaid = False  # the last heading is in no section yet

    def end_section(*, dropping_last: bool) -> None:
        """The section ends: its paragraphs, or its heading alone when nothing would keep the heading (no
        paragraph under it, no subsection). Before, `## A` right before `## B` was not indexed (QA 47)."""
        nonlocal unsaid
        if paragraphs or (unsaid and dropping_last):
            sections.append(([text for _, text in path], list(paragraphs)))
            paragraphs.clear()
            unsaid = False

    def start_section(level: int, heading: str) -> None:
        nonlocal path, unsaid
        end_paragraph()
        end_section(dropping_last=bool(path) and path[-1][0] >= level)
        path = [*(entry for entry in path if entry[0] < level), (level, _short(heading))]
        unsaid = True

    lines = body.splitlines()
    front_matter = front_matter_end(lines)
    for number, line in enumerate(lines):
        if is_fence(line):
            in_fence = not in_fence
        plain = in_fence or number < front_matter or not headings
        heading = None if plain else atx_heading(line)
        underline = None if plain or len(current) != 1 else setext_level(line)
        if heading:
            start_section(*heading)
            if len(heading[1]) > MAX_HEADING_CHARS:
                current.append(heading[1])
        elif underline and can_be_setext_text(current[0]) and len(current[0].strip()) <= MAX_HEADING_CHARS:
            start_section(underline, current.pop().strip())
        elif not line.strip() and not (in_fence or number < front_matter):
            end_paragraph()
        else:
            current.append(line)
    end_paragraph()
    end_section(dropping_last=True)
    return sections


def units_of(text: str) -> list[tuple[int, int]]:
    """Where each unit of `text` starts and ends."""
    return [match.span() for match in UNIT.finditer(text)]


def _windows(paragraph: str, units: list[tuple[int, int]]) -> list[str]:
    """Split an over-long paragraph into overlapping windows of at most MAX_WORDS units."""
    step = MAX_WORDS - OVERLAP_WORDS
    starts = range(0, max(len(units) - OVERLAP_WORDS, 1), step)
    return [paragraph[units[start][0] : units[min(start + MAX_WORDS, len(units)) - 1][1]] for start in starts]


def _pack(paragraphs: list[str]) -> list[str]:
    """Greedily pack whole paragraphs into passages of at most MAX_WORDS units."""
    passages: list[str] = []
    current: list[str] = []
    size = 0
    for paragraph in paragraphs:
        units = units_of(paragraph)
        if len(units) > MAX_WORDS:
            if current:
                passages.append("\n\n".join(current))
                current, size = [], 0
            passages.extend(_windows(paragraph, units))
            continue
        if size + len(units) > MAX_WORDS and current:
            passages.append("\n\n".join(current))
            # Overlap only as far as the next paragraph leaves room: no passage exceeds MAX_WORDS.
            last = units_of(current[-1])
            keep = min(OVERLAP_WORDS, MAX_WORDS - len(units), len(last)) if size > OVERLAP_WORDS else 0
            current, size = ([current[-1][last[-keep][0] :]], keep) if keep > 0 else ([], 0)
        current.append(paragraph)
        size += len(units)
    if current:
        passages.append("\n\n".join(current))
    return passages


def _chunks(title: str, sections: list[tuple[list[str], list[str]]]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for path, paragraphs in sections:
        heading = " › ".join([title, *path])
        for text in _pack(paragraphs) or [""]:  # a heading with nothing under it is a passage of its own
            chunks.append(Chunk(ordinal=len(chunks), heading=heading, text=text))
    return chunks


def chunk_document(title: str, body: str) -> list[Chunk]:
    """Passages of a document; a document with an empty body still gets one passage (its title).

    Over `MAX_SECTIONED_PASSAGES`, headings are read as text if that makes fewer passages: a heading every
    few words (a 1 MB body of `# h` / `t` lines made 170,000 passages, hours of embedding for one event)
    then costs what the same words without headings would."""
    title, body = nfc(title), nfc(body)
    chunks = _chunks(title, _sections(body))
    if len(chunks) > MAX_SECTIONED_PASSAGES:
        chunks = min(chunks, _chunks(title, _sections(body, headings=False)), key=len)
    return chunks or [Chunk(ordinal=0, heading=title, text="")]


def document_passages(title: str, body: str | None, *, filename: str | None = None) -> list[Chunk]:
    """What the indexer stores and embeds for a document: its body's passages (none for a body it could not
    read: a failed upload), then an upload's file name (`file_name_passage`)."""
    chunks = [] if body is None else chunk_document(title, body)
    return chunks if filename is None else chunks + file_name_passage(title, filename, ordinal=len(chunks))


def file_name_passage(title: str, filename: str, *, ordinal: int) -> list[Chunk]:
    """An uploaded file's name, as a passage under its title: its owner knows it by that name, and a file's
    own title (a template's, often) may be another's too (QA 47). None for a name of white space."""
    name = " ".join(nfc(filename).split())
    if is_blank(name):
        return []
    # PostgreSQL's parser reads `q3_budget.docx` as one word (a host name): its parts follow, to be found too.
    parts = " ".join(NAME_PART.findall(name))
    text = name if parts == name else f"{name} ({parts})"
    return [Chunk(ordinal=ordinal, heading=nfc(title), text=text)]
