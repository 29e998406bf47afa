"""Base model for camelCase JSON on the wire."""

import unicodedata
from collections.abc import Callable
from typing import Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# PostgreSQL text cannot hold NUL characters: refuse them at the edge, not deep in an INSERT.
NO_NUL = r"^[^\x00]*$"
# PostgreSQL's bigint: a version or size above it could never be stored, so it is refused at the edge.
BIGINT_MAX = 2**63 - 1


# Unicode's default-ignorable code points that are not format characters (Cf): Hangul fillers, variation
# selectors, the combining grapheme joiner, the unassigned ones. They render as nothing, as zero-width spaces
# do; so does the Braille blank (U+2800), a favourite for names that look empty.
_IGNORABLE = frozenset(
    [0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x2065, 0x2800, 0x3164, 0xFFA0]
).union(range(0xFE00, 0xFE10), range(0xFFF0, 0xFFF9), range(0xE0000, 0xE1000))


def is_blank(text: str) -> bool:
    """Only white space, control and invisible characters (zero-width space, joiners, BOM, Hangul filler,
    variation selectors): nothing to find."""
    return all(char.isspace() or ord(char) in _IGNORABLE or unicodedata.category(char) in ("Cf", "Cc") for char in text)


def nfc(text: str) -> str:
    """One spelling of what reads the same: "café" with é, or with e and U+0301 (the indexer keeps text so)."""
    return unicodedata.normalize("NFC", text)


def nfc_within(limit: int) -> Callable[[str], str]:
    """`nfc`, refusing text over `limit` characters once folded: some characters grow in NFC (U+0958 is
    two), and a limit checked only as sent would let through what the next reader refuses."""

    def fold(text: str) -> str:
        folded = nfc(text)
        if len(folded) > limit:
            raise ValueError(f"over {limit} characters in Unicode NFC ({len(folded)})")
        return folded

    return fold


class WireModel(BaseModel):
    """Strict, camelCase-on-the-wire model; Python code uses snake_case names."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
    )

    @classmethod
    def from_wire(cls, data: object) -> Self:
        """Validate a payload as it came over the wire: camelCase names only (Python code may construct the
        model by its snake_case names; a publisher sending `document_id` is told the name is `documentId`)."""
        return cls.model_validate(data, by_alias=True, by_name=False)

    def to_wire(self) -> bytes:
        """Serialise with wire (camelCase) names, omitting unset optionals."""
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()
