"""Plain text: decoded as UTF-8 (or UTF-16 with a byte-order mark); binary data is refused, not garbled."""

import codecs

from cortex_extractors.errors import CorruptFile, TooLarge
from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import MAX_TEXT_CHARS
from cortex_extractors.media_types import PLAIN_TEXT

BOM_ENCODINGS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes, encoding: str = "utf-8") -> str:
    """The text in `data`; a byte-order mark overrides `encoding`. CorruptFile for binary data."""
    encoding = next((name for bom, name in BOM_ENCODINGS if data.startswith(bom)), encoding)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise CorruptFile(
            f"not {encoding.upper()} text: undecodable byte 0x{data[exc.start]:02x} at offset {exc.start} "
            "(binary data with a text file's type or name?)"
        ) from exc
    if "\x00" in text:
        raise CorruptFile("not text: it contains NUL bytes (binary data with a text file's type or name?)")
    return text


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
