"""`detect_media_type`: magic bytes first, then the file name; text that is not binary stays text."""

import io
import zipfile

import pytest

from cortex_extractors import detect_media_type, media_types, samples


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: samples.pdf_file(["x"]), media_types.PDF),
        (lambda: samples.docx_file("t", []), media_types.DOCX),
        (lambda: samples.xlsx_file({"S": [["x"]]}), media_types.XLSX),
        (lambda: samples.pptx_file([("t", "b")]), media_types.PPTX),
    ],
)
def test_binary_formats_are_known_by_their_bytes_whatever_their_name(make: object, expected: str) -> None:
    data = make()  # type: ignore[operator]
    assert detect_media_type(None, data) == expected
    assert detect_media_type("misnamed.txt", data) == expected


@pytest.mark.parametrize(
    ("filename", "data", "expected"),
    [
        ("notes.md", b"# Notes", media_types.MARKDOWN),
        ("NOTES.MARKDOWN", b"# Notes", media_types.MARKDOWN),
        ("notes.txt", b"plain", media_types.PLAIN_TEXT),
        ("page.htm", b"<p>x</p>", media_types.HTML),
        ("page", b"  <!DOCTYPE html><html></html>", media_types.HTML),
        ("config.yaml", b"key: value\n", media_types.PLAIN_TEXT),
        ("README", b"", media_types.PLAIN_TEXT),
        ("empty.pdf", b"", media_types.PDF),  # before: text, and an empty document instead of a failure
        ("empty.docx", b"", media_types.DOCX),
        ("notes.txt", b"\xff\xfe\x00\x81", media_types.PLAIN_TEXT),  # named text: its extractor says why not
        ("photo.png", b"\x89PNG\r\n\x1a\n\x00\x00", "image/png"),
        ("blob", b"\x00\x01\x02\xff", media_types.OCTET_STREAM),
        ("old.doc", media_types.OLE_MAGIC + b"\x00" * 100, "application/msword"),
        ("locked.docx", media_types.OLE_MAGIC + b"\x00" * 100, media_types.DOCX),
    ],
)
def test_by_name_and_content(filename: str, data: bytes, expected: str) -> None:
    assert detect_media_type(filename, data) == expected


def test_a_zip_that_is_no_office_package_is_a_zip() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("a.txt", "x")
    assert detect_media_type("archive.bin", out.getvalue()) == media_types.ZIP


def test_only_a_signature_at_the_start_proves_a_type() -> None:
    """What an upload's bytes prove overrides its declared type; a hint does not."""
    assert media_types.signed_media_type(samples.pdf_file(["x"])) == media_types.PDF
    assert media_types.signed_media_type(samples.docx_file("t", [])) == media_types.DOCX
    assert media_types.signed_media_type(samples.pptx_file([("t", "b")])) == media_types.PPTX
    # A markdown note about PDFs, a ZIP that is no Office package, an OLE container: nothing proven.
    assert media_types.signed_media_type(b"# PDF\n\nEvery file starts with %PDF-1.7.") is None
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as package:
        package.writestr("notes.txt", "x")
    assert media_types.signed_media_type(archive.getvalue()) is None
    assert media_types.signed_media_type(media_types.OLE_MAGIC + b"\x00" * 100) is None


@pytest.mark.parametrize("filename", ["about.md", "notes.txt", "upload", None])
def test_text_that_mentions_the_pdf_header_is_text(filename: str | None) -> None:
    """Before: any `%PDF-` in the first 1024 bytes made a PDF, and the note failed as a corrupt one."""
    note = b"# PDF files\n\nEvery PDF starts with %PDF-1.7, then its objects.\n"
    assert detect_media_type(filename, note) in (media_types.MARKDOWN, media_types.PLAIN_TEXT)
    if filename and filename.endswith((".md", ".txt")):  # also in a legacy encoding, which is not UTF-8
        legacy = "Café notes: every PDF starts with %PDF-1.4.\n".encode("cp1252")
        assert detect_media_type(filename, legacy) in (media_types.MARKDOWN, media_types.PLAIN_TEXT)


def test_a_pdf_after_a_few_bytes_of_preamble_is_still_a_pdf() -> None:
    """PDF readers look for the header within the first 1024 bytes: so does detection, in a file named so or
    one that is not text."""
    pdf = samples.pdf_file(["x"])
    assert detect_media_type("report.pdf", b"junk\r\n" + pdf) == media_types.PDF
    assert detect_media_type("upload", b"junk\r\n" + pdf.replace(b"\n", b"\n%\xe2\xe3\xcf\xd3\n", 1)) == media_types.PDF
