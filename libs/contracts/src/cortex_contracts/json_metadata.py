"""Free-form JSON metadata, refused at the edge unless PostgreSQL's jsonb can store it as sent.

Python's JSON reader (FastAPI's, and pydantic's for `Any`) takes `NaN`, `Infinity` and `1e400`, which
JSON has no numbers for: serialised again they turn into `null` (silently) or into text jsonb refuses.
A `\\u0000` is refused by jsonb too, a lone surrogate has no UTF-8 at all, and a deep nesting fails
pydantic's serialiser (a 500 at ~250 levels) before it ever reaches the database.
"""

import json
import re
from typing import Annotated, Any

from pydantic import AfterValidator

MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 32
# A NUL escaped in the encoded JSON: `\u0000` after an even run of backslashes. After an odd run it is the
# text "\u0000" (an escaped backslash, then "u0000"), which jsonb stores as sent.
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _depth(value: Any) -> int:
    """How deeply objects and arrays nest (a scalar: 0); iterative, so no input exhausts the stack."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def checked_metadata(value: dict[str, Any]) -> dict[str, Any]:
    if _depth(value) > MAX_METADATA_DEPTH:
        raise ValueError(f"metadata nests deeper than {MAX_METADATA_DEPTH} levels")
    try:
        # Compact, as the size is told: 16 KiB of JSON as a client would send it (QA 36: measured with `", "`
        # and `": "`, an array of 7,000 zeros, 14 KB as sent, was refused).
        encoded = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except ValueError as exc:
        raise ValueError("metadata holds NaN or an infinite number, which JSON cannot carry") from exc
    try:
        size = len(encoded.encode())
    except UnicodeEncodeError as exc:  # a lone surrogate (`\ud800`): no UTF-8 for it, the event could not be sent
        raise ValueError("metadata must be valid Unicode: it holds a lone surrogate") from exc
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is limited to {MAX_METADATA_BYTES // 1024} KiB of JSON")
    if _NUL_ESCAPE.search(encoded):
        raise ValueError("metadata must not contain NUL characters")
    return value


JsonMetadata = Annotated[dict[str, Any], AfterValidator(checked_metadata)]
