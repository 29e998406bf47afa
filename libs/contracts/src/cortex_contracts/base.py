"""Base model for camelCase JSON on the wire."""

import unicodedata

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# PostgreSQL text cannot hold NUL characters: refuse them at the edge, not deep in an INSERT.
NO_NUL = r"^[^\x00]*$"
# PostgreSQL's bigint: a version or size above it could never be stored, so it is refused at the edge.
BIGINT_MAX = 2**63 - 1


def is_blank(text: str) -> bool:
    """Only white space and invisible format characters (zero-width space, joiners, BOM): nothing to find."""
    return all(char.isspace() or unicodedata.category(char) == "Cf" for char in text)


class WireModel(BaseModel):
    """Strict, camelCase-on-the-wire model; Python code uses snake_case names."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
    )

    def to_wire(self) -> bytes:
        """Serialise with wire (camelCase) names, omitting unset optionals."""
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()
