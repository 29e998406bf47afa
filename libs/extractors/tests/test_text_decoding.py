"""Text that says no charset: UTF-8, windows-1252, and UTF-8 with a few stray windows-1252 bytes in it."""

import pytest

from cortex_extractors import extract, media_types
from cortex_extractors.errors import CorruptFile

STRAY_LATIN_1 = "Le café du coin — naïve?".encode().replace("ï".encode(), b"\xef")  # one byte pasted from Latin-1


@pytest.mark.parametrize(
    ("media_type", "data", "text"),
    [
        (media_types.PLAIN_TEXT, STRAY_LATIN_1, "Le café du coin — naïve?"),
        (media_types.MARKDOWN, b"# Caf\xc3\xa9\n\nna\xefve", "# Café\n\nnaïve"),
        (media_types.HTML, b"<p>Stra\xc3\x9fe \xe2\x82\xac 10, gr\xfcn</p>", "Straße € 10, grün"),
        (media_types.PLAIN_TEXT, "€ ünï ".encode() + b"\x80 and \x81", "€ ünï € and \x81"),  # \x81: unassigned
        (media_types.PLAIN_TEXT, "日本語".encode() + b" \xe2\x82 cut", "日本語 â‚ cut"),  # a truncated sequence
    ],
)
def test_utf8_with_a_few_stray_bytes_is_utf8_and_they_are_windows_1252(media_type: str, data: bytes, text: str) -> None:
    """Before: all of it was read as windows-1252, so every correct character was mojibake (`cafÃ©`)."""
    assert extract(media_type, data, "notes.txt").text == text


def test_windows_1252_text_where_two_bytes_happen_to_spell_utf8_stays_windows_1252() -> None:
    text = "Marché Ã© café crème brûlée"
    data = text.encode("cp1252")
    assert b"\xc3\xa9" in data  # `Ã©` is UTF-8 for `é`, but the other accented letters are not UTF-8
    assert extract(media_types.PLAIN_TEXT, data, "legacy.txt").text == text


def test_stray_bytes_with_control_bytes_are_still_refused_as_binary() -> None:
    with pytest.raises(CorruptFile, match="not UTF-8 text"):
        extract(media_types.PLAIN_TEXT, "café".encode() + b"\xef\x01\x02", "blob.txt")


@pytest.mark.parametrize(
    ("media_type", "data", "text"),
    [
        (media_types.HTML, b'<meta charset="utf-8"><p>caf\xc3\xa9 na\xefve', "café naïve"),
        (media_types.HTML, b'<meta charset="UTF-8"><p>Gr\xfc\xdfe aus K\xf6ln', "Grüße aus Köln"),  # all legacy
        (media_types.PLAIN_TEXT, b"\xef\xbb\xbfcaf\xc3\xa9 na\xefve", "café naïve"),  # a UTF-8 byte-order mark
    ],
)
def test_declared_utf8_with_stray_bytes_is_read_with_them_as_windows_1252(
    media_type: str, data: bytes, text: str
) -> None:
    """Before: refused as 'not UTF-8 text', where browsers show the page (with U+FFFD for the stray bytes)."""
    assert extract(media_type, data, "page.html").text == text


def test_declared_utf8_with_control_bytes_is_still_refused_as_binary() -> None:
    with pytest.raises(CorruptFile, match="not UTF-8 text"):
        extract(media_types.HTML, b'<meta charset="utf-8"><p>\xff\x01\x02</p>', "page.html")


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ("„Maß“".encode("cp1252"), "„Maß“"),  # `ß“` spells NKo `ߓ` in UTF-8: no letter of a script read here
        (
            "Résumé — naïve ".encode() + "“quoted” ‘single’ –".encode("cp1252"),
            "Résumé — naïve “quoted” ‘single’ –",  # before: all windows-1252, `RÃ©sumÃ© â€”`
        ),
    ],
)
def test_the_evidence_for_utf8_is_weighed_by_what_its_characters_are(data: bytes, text: str) -> None:
    """QA 45: a two-byte character counted as much as a stray byte, whatever it was."""
    assert extract(media_types.PLAIN_TEXT, data).text == text


@pytest.mark.parametrize(
    ("charset", "body", "text"),
    [
        ("iso-8859-1", "He said “hi” to Cécile".encode(), "He said “hi” to Cécile"),  # UTF-8 mislabelled
        ("windows-1252", b"caf\xe9 \x9d ok", "café \x9d ok"),  # an unassigned byte, as browsers read it
        ("shift_jis", b"\x82\xa0 \x80\xff", "あ \ufffd\ufffd"),
    ],
)
def test_a_page_in_a_declared_charset_is_read_whatever_bytes_it_holds(charset: str, body: bytes, text: str) -> None:
    """QA 45: one byte the declared encoding does not define refused the whole page (`undecodable byte 0x9d`)."""
    page = f'<html><head><meta charset="{charset}"></head><body><p>'.encode() + body + b"</p></body></html>"
    assert extract(media_types.HTML, page).text == text
