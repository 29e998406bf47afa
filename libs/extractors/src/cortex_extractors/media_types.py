"""Media types the built-in extractors read, and `detect_media_type`: magic bytes first, then the extension."""

import codecs
import io
import mimetypes
import zipfile
from pathlib import PurePath

MARKDOWN = "text/markdown"
PLAIN_TEXT = "text/plain"
HTML = "text/html"
PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
ZIP = "application/zip"
OLE_STORAGE = "application/x-ole-storage"
OCTET_STREAM = "application/octet-stream"

TEXT_TYPES = frozenset({MARKDOWN, PLAIN_TEXT})

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")
# Legacy Office files, and also password-protected OOXML: an encrypted .docx is an OLE container.
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)

BY_EXTENSION = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".mdown": MARKDOWN,
    ".txt": PLAIN_TEXT,
    ".text": PLAIN_TEXT,
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".pdf": PDF,
    ".docx": DOCX,
    ".xlsx": XLSX,
    ".pptx": PPTX,
}
OOXML_BY_EXTENSION = {".docx": DOCX, ".xlsx": XLSX, ".pptx": PPTX}
OOXML_BY_PART = {"word/document.xml": DOCX, "xl/workbook.xml": XLSX, "ppt/presentation.xml": PPTX}
SNIFF_BYTES = 4096


LABELS = {MARKDOWN: "markdown", PLAIN_TEXT: "text", HTML: "HTML", PDF: "PDF", DOCX: "DOCX", XLSX: "XLSX", PPTX: "PPTX"}


def label(media_type: str) -> str:
    """A short name for messages: `DOCX` rather than the full OOXML media type."""
    return LABELS.get(media_type, media_type)


def normalize(media_type: str) -> str:
    """`Text/HTML; charset=utf-8` → `text/html`."""
    return media_type.split(";", 1)[0].strip().lower()


def _extension(filename: str | None) -> str:
    return PurePath(filename).suffix.lower() if filename else ""


def looks_like_text(data: bytes) -> bool:
    """A byte-order mark, or a start that is UTF-8 without NUL bytes."""
    if data.startswith(BOMS):
        return True
    head = data[:SNIFF_BYTES]
    if b"\x00" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(data) <= SNIFF_BYTES)
    except UnicodeDecodeError:
        return False
    return True


def _looks_like_html(data: bytes) -> bool:
    start = data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return start.startswith((b"<!doctype html", b"<html"))


def _zip_kind(filename: str | None, data: bytes) -> str:
    if kind := OOXML_BY_EXTENSION.get(_extension(filename)):
        return kind
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return ZIP
    return next((kind for part, kind in OOXML_BY_PART.items() if part in names), ZIP)


def signed_media_type(data: bytes) -> str | None:
    """The type the first bytes prove on their own: a PDF header, or an OOXML package, at offset 0. None
    for anything else (text that mentions `%PDF-` near its start included)."""
    if data.startswith(b"%PDF-"):
        return PDF
    if data.startswith(ZIP_MAGIC):
        kind = _zip_kind(None, data)  # the parts, not the name: the name may be as wrong as a declared type
        return kind if kind != ZIP else None
    return None


def _has_pdf_header(filename: str | None, data: bytes) -> bool:
    """PDF readers find the header anywhere in the first 1024 bytes; a text file that mentions it (named as
    text, or reading as UTF-8) is still text."""
    if data.startswith(b"%PDF-"):
        return True
    if b"%PDF-" not in data[:1024]:
        return False
    extension = _extension(filename)
    named_text = BY_EXTENSION.get(extension) in (*TEXT_TYPES, HTML)
    return extension == ".pdf" or (not named_text and not looks_like_text(data))


def detect_media_type(filename: str | None, data: bytes) -> str:
    """The media type of a file from its first bytes, then its name; `application/octet-stream` if neither tells."""
    if _has_pdf_header(filename, data):
        return PDF
    if data.startswith(ZIP_MAGIC):
        return _zip_kind(filename, data)
    extension = _extension(filename)
    if data.startswith(OLE_MAGIC):
        return OOXML_BY_EXTENSION.get(extension) or mimetypes.guess_type(f"x{extension}")[0] or OLE_STORAGE
    if extension in BY_EXTENSION and BY_EXTENSION[extension] in (*TEXT_TYPES, HTML):
        return BY_EXTENSION[extension]
    guessed = (mimetypes.guess_type(f"x{extension}")[0] or BY_EXTENSION.get(extension)) if extension else None
    # An empty file is as its name says, if it says (an empty PDF fails as a PDF, not as an empty text).
    if looks_like_text(data) and (data or not guessed):
        return HTML if _looks_like_html(data) else PLAIN_TEXT
    return guessed or OCTET_STREAM
