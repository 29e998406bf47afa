"""Opaque, tamper-evident page cursors: base64url(JSON) + HMAC-SHA256, bound to the org and the query."""

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from cortex_contracts.rpc import FeedFilters


class BadCursor(ValueError):
    pass


def query_key(parts: dict[str, object]) -> str:
    """What binds a cursor to the request it was made for: the parts that decide its pages, hashed."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def filter_sets(filters: FeedFilters) -> dict[str, list[str]]:
    """Filters as the sets they are: `type=a&type=b` on one page and `type=b&type=a` on the next is one query."""
    return {name: sorted({str(value) for value in values}) for name, values in filters}


class CursorCodec:
    def __init__(self, secret: bytes) -> None:
        self._key = hashlib.sha256(b"cortex-cursor\x00" + secret).digest()

    def _mac(self, body: bytes) -> str:
        return base64.urlsafe_b64encode(hmac.digest(self._key, body, "sha256")[:16]).decode().rstrip("=")

    def encode(self, state: dict[str, Any]) -> str:
        # UTF-8, not \u escapes: a facet page's cursor carries a label, which may be 300 characters of CJK.
        text = json.dumps(state, separators=(",", ":"), ensure_ascii=False)
        body = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
        return f"{body}.{self._mac(body.encode())}"

    def decode(self, cursor: str) -> dict[str, Any]:
        body, _, mac = cursor.partition(".")
        # Every cursor made here is ASCII; hmac.compare_digest raises on other text instead of answering.
        if not cursor.isascii() or not body or not hmac.compare_digest(mac, self._mac(body.encode())):
            raise BadCursor("cursor is not valid")
        try:
            state = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (binascii.Error, ValueError) as exc:
            raise BadCursor("cursor is not valid") from exc
        if not isinstance(state, dict):
            raise BadCursor("cursor is not valid")
        return state

    def decode_for(self, cursor: str, key: str) -> dict[str, Any]:
        """A cursor's state, if it was made for the request whose `query_key` is `key` (as state `k`)."""
        state = self.decode(cursor)
        if state.get("k") != key:
            raise BadCursor("cursor belongs to another query")
        return state
