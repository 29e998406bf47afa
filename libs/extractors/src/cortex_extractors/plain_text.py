"""Plain text: decoded as UTF-8 (or UTF-16 with a byte-order mark, or windows-1252 when it is not UTF-8);
binary data is refused, not garbled. UTF-8 with a few stray legacy bytes (or any, when it is declared UTF-8)
is read as UTF-8, those bytes as windows-1252."""

import codecs
import re

from cortex_extractors.errors import CorruptFile, TooLarge
from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import MAX_TEXT_CHARS
from cortex_extractors.media_types import PLAIN_TEXT

CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")  # binary data has them, text (but \t \n \f \r) not
UNASSIGNED_IN_1252 = re.compile(rb"([\x81\x8d\x8f\x90\x9d])")
STRAY_BYTE = re.compile("[\udc80-\udcff]")  # a byte UTF-8 could not decode, as Python's surrogateescape keeps it
UTF_8 = frozenset({"utf-8", "utf-8-sig"})
BOM_ENCODINGS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes, encoding: str | None = None) -> str:
    """The text in `data`; a byte-order mark overrides `encoding`. CorruptFile for binary data.

    Undeclared (`encoding` None), it is UTF-8, or else windows-1252 when it holds no control bytes but
    blanks: the web's own default for unlabelled pages, and what legacy Western text files are written in.
    UTF-8 but for a few stray bytes (no more than its multi-byte characters), it is UTF-8 with those bytes
    read as windows-1252: one Latin-1 `ï` pasted into UTF-8 text used to make all of it mojibake. Declared
    UTF-8 (by a byte-order mark or a page's charset), it is read so however many stray bytes it has: such a
    page or file was refused, where browsers show it (with U+FFFD for each stray byte).
    """
    declared = next((name for bom, name in BOM_ENCODINGS if data.startswith(bom)), encoding)
    encoding = declared or "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        if not CONTROL_BYTES.search(data):
            if declared is None:
                return _mostly_utf8(data) or _windows_1252(data)
            if codecs.lookup(encoding).name in UTF_8:
                return _utf8_with_stray_bytes(data)[0]
        raise CorruptFile(
            f"not {encoding.upper()} text: undecodable byte 0x{data[exc.start]:02x} at offset {exc.start} "
            "(binary data with a text file's type or name?)"
        ) from exc
    if "\x00" in text:
        raise CorruptFile("not text: it contains NUL bytes (binary data with a text file's type or name?)")
    return text


def _mostly_utf8(data: bytes) -> str | None:
    """`data` as UTF-8, its undecodable bytes as windows-1252; None when those outnumber its multi-byte
    characters. Read so, windows-1252 text differs only where two or three of its characters happen to
    spell a UTF-8 one (`Ã©` for `é`): a rare pair among many high bytes, not most of them."""
    text, stray, multi_byte = _utf8_with_stray_bytes(data)
    return text if multi_byte >= stray else None


def _utf8_with_stray_bytes(data: bytes) -> tuple[str, int, int]:
    """`data` as UTF-8 (after its byte-order mark, if any), its undecodable bytes as windows-1252; and how
    many such stray bytes and how many multi-byte characters it holds."""
    text = data.decode("utf-8-sig", "surrogateescape")
    stray = len(STRAY_BYTE.findall(text))
    multi_byte = len(text) - len(text.encode("ascii", "ignore")) - stray
    return text.translate(_STRAY_AS_1252), stray, multi_byte


def _windows_1252(data: bytes) -> str:
    # Its five unassigned bytes map to the C1 controls of the same number, as the WHATWG Encoding standard has it.
    return "".join(
        chunk.decode("cp1252") if index % 2 == 0 else chunk.decode("latin-1")
        for index, chunk in enumerate(UNASSIGNED_IN_1252.split(data))
    )


_STRAY_AS_1252 = {0xDC00 + byte: _windows_1252(bytes([byte])) for byte in range(0x80, 0x100)}


def bounded(text: str) -> str:
    """`text` itself, as the body of a document; TooLarge if it is over `MAX_TEXT_CHARS`."""
    if len(text) > MAX_TEXT_CHARS:
        raise TooLarge(f"the text is over {MAX_TEXT_CHARS:,} characters")
    return text


class PlainTextExtractor:
    media_types = frozenset({PLAIN_TEXT})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        return Extracted(title=None, text=bounded(decode_text(data)))


extractor = PlainTextExtractor()
