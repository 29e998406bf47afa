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
SINGLE_BYTE_LABELS = frozenset({"cp1252", "latin-1", "iso8859-1", "iso8859-15"})
NON_ASCII = re.compile("[^\x00-\x7f]")
PLAUSIBLE_TWO_BYTE_FROM, PLAUSIBLE_TWO_BYTE_TO = 0xA0, 0x600  # from NBSP to the end of Hebrew
TWO_BYTE_TO = 0x800
STRAY_FROM, STRAY_TO = 0xDC80, 0xDCFF  # surrogateescape's stray bytes
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
    page or file was refused, where browsers show it (with U+FFFD for each stray byte). Declared in another
    encoding, a byte it does not define is read as browsers read it (windows-1252's five unassigned bytes
    as the C1 controls, any other as U+FFFD), and text declared Latin-1 that is valid UTF-8 is read as UTF-8.
    """
    declared = next((name for bom, name in BOM_ENCODINGS if data.startswith(bom)), encoding)
    encoding = declared or "utf-8"
    if declared and codecs.lookup(declared).name in SINGLE_BYTE_LABELS and _is_utf8(data):
        encoding = "utf-8"  # UTF-8 mislabelled as Latin-1 (common): browsers show mojibake, the index need not
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        if not CONTROL_BYTES.search(data):
            if declared is None:
                return _mostly_utf8(data) or _windows_1252(data)
            name = codecs.lookup(encoding).name
            if name in UTF_8:
                return _utf8_with_stray_bytes(data)[0]
            if name == "cp1252":
                return _windows_1252(data)  # its five unassigned bytes too, as browsers read them
            return data.decode(encoding, "replace")  # as browsers show it: U+FFFD for a byte it cannot read
        raise CorruptFile(
            f"not {encoding.upper()} text: undecodable byte 0x{data[exc.start]:02x} at offset {exc.start} "
            "(binary data with a text file's type or name?)"
        ) from exc
    if "\x00" in text:
        raise CorruptFile("not text: it contains NUL bytes (binary data with a text file's type or name?)")
    return text


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _mostly_utf8(data: bytes) -> str | None:
    """`data` as UTF-8, its undecodable bytes as windows-1252; None when they outweigh the evidence for UTF-8.
    Read so, windows-1252 text differs only where two or three of its characters happen to spell a UTF-8 one:
    `Ã©` spells `é`, a letter, but most such pairs spell a character of another script (`ß“` is NKo `ߓ`). So a
    two-byte character counts only if it is a letter or sign of the Latin, Greek, Cyrillic, Armenian or
    Hebrew blocks, and a three- or four-byte one, which windows-1252 text hardly ever spells, counts twice."""
    text, stray, evidence = _utf8_with_stray_bytes(data)
    return text if evidence >= stray else None


def _utf8_with_stray_bytes(data: bytes) -> tuple[str, int, int]:
    """`data` as UTF-8 (after its byte-order mark, if any), its undecodable bytes as windows-1252; how many
    such stray bytes it holds, and the weight of its multi-byte characters as evidence for UTF-8."""
    text = data.decode("utf-8-sig", "surrogateescape")
    stray = len(STRAY_BYTE.findall(text))
    evidence = sum(_weight(ord(char)) for char in NON_ASCII.findall(text))
    return text.translate(_STRAY_AS_1252), stray, evidence


def _weight(code_point: int) -> int:
    if PLAUSIBLE_TWO_BYTE_FROM <= code_point < PLAUSIBLE_TWO_BYTE_TO:
        return 1
    return 2 if TWO_BYTE_TO <= code_point < STRAY_FROM or code_point > STRAY_TO else 0


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
