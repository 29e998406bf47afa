"""What cannot be read fails with a typed error and a reason: unsupported, corrupt, encrypted, too large."""

import io
import zipfile

import pypdf._encryption
import pytest
from pypdf._crypt_providers import _fallback as pypdf_fallback

from cortex_extractors import (
    CorruptFile,
    EncryptedFile,
    ExtractionError,
    TooLarge,
    UnsupportedMediaType,
    extract,
    media_types,
    office_package,
    pdf,
    registry,
    samples,
    spreadsheet,
)
from cortex_extractors.limits import MAX_TEXT_CHARS


def test_a_password_protected_pdf_is_reported_as_encrypted() -> None:
    data = samples.pdf_file(["top secret"], password="hunter2")
    with pytest.raises(EncryptedFile) as raised:
        extract(media_types.PDF, data)
    assert raised.value.summary == "encrypted: the PDF needs a password to open"


def test_a_pdf_with_an_empty_user_password_opens_for_anyone_and_is_read() -> None:
    data = samples.pdf_file(["readable anyway"], password="")
    assert extract(media_types.PDF, data).text == "readable anyway"


@pytest.mark.parametrize(
    ("edit", "scheme"),
    [
        ((b"/Filter /Standard", b"/Filter /PubSecXY"), "only Standard PDF encryption handler"),  # same length
        ((b"/V 5", b"/V 9"), "Encryption V=9"),
    ],
    ids=["another-security-handler", "an-unknown-algorithm"],
)
def test_a_pdf_encrypted_with_a_scheme_pypdf_lacks_is_reported_as_encrypted(
    edit: tuple[bytes, bytes], scheme: str
) -> None:
    data = samples.pdf_file(["secret"], password="")
    assert data.count(edit[0]) == 1
    with pytest.raises(EncryptedFile) as raised:  # before: corrupt (NotImplementedError), raised opening the file
        extract(media_types.PDF, data.replace(*edit))
    assert raised.value.reason.startswith("the PDF is encrypted with a scheme that cannot be opened here (")
    assert scheme in raised.value.reason


def test_a_pdf_whose_cipher_needs_a_missing_library_is_reported_as_encrypted(monkeypatch: pytest.MonkeyPatch) -> None:
    """As where neither `cryptography` nor `pycryptodome` is installed: pypdf's stand-ins raise DependencyError."""
    data = samples.pdf_file(["secret"], password="")  # AES-256
    monkeypatch.setattr(pypdf._encryption, "aes_cbc_decrypt", pypdf_fallback.aes_cbc_decrypt)
    monkeypatch.setattr(pypdf._encryption, "CryptAES", pypdf_fallback.CryptAES)
    with pytest.raises(EncryptedFile, match=r"cannot be opened here \(cryptography"):
        extract(media_types.PDF, data)


def test_a_pdf_stream_filter_pypdf_lacks_is_still_a_corrupt_file() -> None:
    """NotImplementedError means an encryption scheme only where pypdf's encryption code raised it."""
    data = samples.pdf_file(["some text"]).replace(b"<< /Length", b"<< /Filter /NoSuchDecode /Length", 1)
    with pytest.raises(CorruptFile, match="NotImplementedError: Unsupported filter /NoSuchDecode"):
        extract(media_types.PDF, data)


def test_an_encrypted_office_file_is_reported_as_encrypted() -> None:
    # Encrypted OOXML is an OLE compound file with an EncryptedPackage stream; this stands in for one
    # (no pure-Python writer for it is at hand) with the two markers the check looks at.
    data = media_types.OLE_MAGIC + b"\x00" * 504 + "EncryptedPackage".encode("utf-16-le") + b"\x00" * 64
    for kind in (media_types.DOCX, media_types.XLSX, media_types.PPTX):
        with pytest.raises(EncryptedFile, match="needs a password"):
            extract(kind, data)


@pytest.mark.parametrize("media_type", [media_types.DOCX, "application/msword", "application/vnd.ms-excel"])
def test_a_legacy_binary_office_file_is_unsupported_saying_what_to_save_it_as(media_type: str) -> None:
    with pytest.raises(UnsupportedMediaType, match=r"legacy binary Office file.* save it as"):
        extract(media_type, media_types.OLE_MAGIC + b"\x00" * 1024)


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    ("media_type", "data"),
    [
        (media_types.PDF, b"%PDF-1.7\n\x00\x01 this is not a PDF body at all"),
        (media_types.PDF, b"\x89PNG\r\n\x1a\n" + bytes(range(256))),
        (media_types.DOCX, _truncated(samples.docx_file("t", [("h", "p")]))),
        (media_types.DOCX, b"PK\x03\x04" + b"\xff" * 200),
        (media_types.DOCX, b"plain text pretending to be a document"),
        (media_types.XLSX, _truncated(samples.xlsx_file({"S": [["a"]]}))),
        (media_types.PPTX, _truncated(samples.pptx_file([("t", "b")]))),
        (media_types.PLAIN_TEXT, b"\x89PNG\r\n\x1a\n\xff\xfe\x00 binary junk"),
        (media_types.MARKDOWN, b"valid start then NUL \x00\x00\x00"),
        (media_types.HTML, b"<p>\xff\x01\x02</p>"),  # not UTF-8, and control bytes: not windows-1252 text either
    ],
)
def test_corrupt_bytes_are_a_corrupt_file(media_type: str, data: bytes) -> None:
    with pytest.raises(CorruptFile) as raised:
        extract(media_type, data, "upload.bin")
    assert raised.value.summary.startswith("corrupt: ")
    assert len(raised.value.reason) > 10


def test_a_zip_that_is_not_a_docx_package_is_corrupt() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("notes.txt", "not an office document")
    with pytest.raises(CorruptFile, match="not a readable DOCX file"):
        extract(media_types.DOCX, out.getvalue())


@pytest.mark.parametrize("media_type", ["application/zip", "image/png", "application/msword", ""])
def test_a_type_without_extractor_is_unsupported(media_type: str) -> None:
    with pytest.raises(UnsupportedMediaType, match="no extractor for media type"):
        extract(media_type, b"whatever")


def test_a_decompression_bomb_is_refused_before_it_is_unpacked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(office_package, "MAX_UNPACKED_BYTES", 1024 * 1024)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        archive.writestr("word/document.xml", b"\x00" * (2 * 1024 * 1024))
    bomb = out.getvalue()
    assert len(bomb) < 16 * 1024
    with pytest.raises(TooLarge, match="unpacks to more than 1 MiB"):
        extract(media_types.DOCX, bomb)


def test_an_input_over_the_size_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "MAX_INPUT_BYTES", 1024)
    with pytest.raises(TooLarge, match="over"):
        extract(media_types.PLAIN_TEXT, b"a" * 1025)


def test_text_over_the_output_cap_is_refused() -> None:
    page = b"<p>" + b"word " * (MAX_TEXT_CHARS // 5 + 10) + b"</p>"
    with pytest.raises(TooLarge, match="extracted text is over"):
        extract(media_types.HTML, page)


def test_page_and_row_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdf, "MAX_PAGES", 2)
    with pytest.raises(TooLarge, match="more than 2 pages"):
        extract(media_types.PDF, samples.pdf_file(["1", "2", "3"]))
    monkeypatch.setattr(spreadsheet, "MAX_ROWS_PER_SHEET", 3)
    with pytest.raises(TooLarge, match="'Big' has more than 3 rows"):
        extract(media_types.XLSX, samples.xlsx_file({"Big": [[n] for n in range(4)]}))


def test_every_failure_is_an_extraction_error() -> None:
    for error in (UnsupportedMediaType, CorruptFile, EncryptedFile, TooLarge):
        assert issubclass(error, ExtractionError)


def test_markdown_over_the_output_cap_is_refused() -> None:
    with pytest.raises(TooLarge, match="the text is over"):
        extract(media_types.MARKDOWN, b"x" * (MAX_TEXT_CHARS + 1))


@pytest.mark.parametrize(
    ("media_type", "data", "text"),
    [
        (media_types.PLAIN_TEXT, "Café crème brûlée — 10 €".encode("cp1252"), "Café crème brûlée — 10 €"),
        (media_types.HTML, "<p>Grüße aus Köln</p>".encode("latin-1"), "Grüße aus Köln"),
        (media_types.PLAIN_TEXT, b"unassigned \x81 stays", "unassigned \x81 stays"),
    ],
)
def test_text_that_is_not_utf8_and_says_no_charset_is_read_as_windows_1252(
    media_type: str, data: bytes, text: str
) -> None:
    assert extract(media_type, data, "legacy.txt").text == text  # before: refused as "not UTF-8 text"
