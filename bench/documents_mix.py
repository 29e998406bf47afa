"""A mixed corpus for `bench.ingest --mix`: synthetic documents written as markdown, PDF and DOCX files.

Each document comes from the same generator as the markdown benchmark (`bench.corpus`) and is written,
in turn, as a `.md` file, a PDF (one page per 45 lines, text wrapped as a printed page would be) or a
DOCX (Title, Heading 1 sections, paragraphs). The bench ingests the files as `cortex ingest` does, so
PDFs and DOCX files travel through the Object Store and `kb.<org>.upload.created`.

`expected_text` reads each file back the way the indexer will — the same extractors, the same title
rule — so the bare embedder can be given exactly the passages the pipeline embeds.
"""

import io
import textwrap
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from docx import Document as WordDocument

from bench.corpus import TextGenerator
from cortex_cli.ingest import IngestOptions, document_id_for, title_of, upload_id_for
from cortex_contracts.uploads import upload_document_id
from cortex_extractors import detect_media_type, extract
from cortex_extractors.media_types import TEXT_TYPES
from cortex_extractors.samples import pdf_file
from cortex_indexer import uploads
from cortex_indexer.chunking import Chunk, document_passages

KINDS = ("md", "pdf", "docx")
PDF_LINE_CHARS = 90  # Helvetica 12 pt across a letter page with one-inch margins
PDF_PAGE_LINES = 45


@dataclass(frozen=True)
class MixedFile:
    path: Path
    kind: str  # one of KINDS


@dataclass(frozen=True)
class ExpectedText:
    """What the indexer will index for a file: its title and (extracted) text."""

    title: str
    text: str
    filename: str | None  # published as a file (PDF, DOCX) of that name; None: as a markdown document

    def passages(self) -> list[Chunk]:
        """The passages the indexer embeds: the text's, and an upload's file name's."""
        return document_passages(self.title, self.text, filename=self.filename)


def _sections(body: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The markdown body's intro paragraphs and its `##` sections (heading, paragraphs)."""
    intro: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for part in body.split("\n\n"):
        if part.startswith("# "):
            continue
        if part.startswith("## "):
            sections.append((part[3:], []))
        elif sections:
            sections[-1][1].append(part)
        else:
            intro.append(part)
    return intro, sections


def pdf_bytes(title: str, body: str) -> bytes:
    intro, sections = _sections(body)
    lines = [title, ""]
    for paragraph in intro:
        lines += [*textwrap.wrap(paragraph, PDF_LINE_CHARS), ""]
    for heading, paragraphs in sections:
        lines += [heading, ""]
        for paragraph in paragraphs:
            lines += [*textwrap.wrap(paragraph, PDF_LINE_CHARS), ""]
    pages = ["\n".join(lines[i : i + PDF_PAGE_LINES]) for i in range(0, len(lines), PDF_PAGE_LINES)]
    return pdf_file(pages, title=title)


def docx_bytes(title: str, body: str) -> bytes:
    intro, sections = _sections(body)
    document = WordDocument()
    document.add_heading(title, level=0)
    for paragraph in intro:
        document.add_paragraph(paragraph)
    for heading, paragraphs in sections:
        document.add_heading(heading, level=1)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def write_files(directory: Path, n: int, seed: int, target_bytes: int) -> list[MixedFile]:
    """N files, kinds in turn (md, pdf, docx, md, …), from the seeded generator."""
    generator = TextGenerator(seed)
    files = []
    for index in range(n):
        title, body = generator.markdown_document(target_bytes)
        kind = KINDS[index % len(KINDS)]
        path = directory / f"doc-{index:05d}.{kind}"
        if kind == "md":
            path.write_text(body)
        elif kind == "pdf":
            path.write_bytes(pdf_bytes(title, body))
        else:
            path.write_bytes(docx_bytes(title, body))
        files.append(MixedFile(path, kind))
    return files


def expected_text(path: Path) -> ExpectedText:
    """Title and text as the pipeline sees them: the CLI's choice of route, the indexer's extractors."""
    data = path.read_bytes()
    media_type = detect_media_type(path.name, data)
    if media_type in TEXT_TYPES:  # the generator writes UTF-8 markdown, which the CLI publishes inline
        body = data.decode()
        return ExpectedText(title_of(path, body), body, filename=None)
    extracted = extract(media_type, data, path.name)
    title = (extracted.title or path.stem or path.name)[: uploads.MAX_TITLE_CHARS]  # as uploads._title does
    return ExpectedText(title, extracted.text, filename=path.name)


def extract_all(files: list[MixedFile]) -> tuple[list[ExpectedText], float]:
    """Every file's expected text, and the seconds the extraction took in this process."""
    started = time.perf_counter()
    texts = [expected_text(file.path) for file in files]
    return texts, time.perf_counter() - started


def document_id(options: IngestOptions, file: MixedFile, expected: ExpectedText) -> uuid.UUID:
    """The id the indexer gives the document made from this file."""
    if expected.filename is not None:
        return upload_document_id(upload_id_for(options, file.path))
    return document_id_for(options, file.path)
