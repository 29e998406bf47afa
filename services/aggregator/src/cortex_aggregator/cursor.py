"""Opaque, tamper-evident page cursors: base64url(JSON) + HMAC-SHA256, bound to the org and the query."""

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from pydantic import BaseModel


class BadCursor(ValueError):
    pass


def query_key(request: BaseModel, fields: set[str]) -> str:
    """What binds a cursor to the request it was made for: these fields of it, hashed."""
    return hashlib.sha256(request.model_dump_json(include=fields).encode()).hexdigest()[:16]


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
