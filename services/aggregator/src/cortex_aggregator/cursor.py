"""Opaque, tamper-evident page cursors: base64url(JSON) + HMAC-SHA256, bound to the org and the query."""

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any


class BadCursor(ValueError):
    pass


class CursorCodec:
    def __init__(self, secret: bytes) -> None:
        self._key = hashlib.sha256(b"cortex-cursor\x00" + secret).digest()

    def _mac(self, body: bytes) -> str:
        return base64.urlsafe_b64encode(hmac.digest(self._key, body, "sha256")[:16]).decode().rstrip("=")

    def encode(self, state: dict[str, Any]) -> str:
        body = base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")
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
