"""Page cursors: opaque and tamper-evident."""

import base64
import json

import pytest

from cortex_aggregator.cursor import BadCursor, CursorCodec

STATE = {"k": "0123abcd", "u": "2024-05-01T10:00:00+00:00", "i": "5a1c3f00-1f2e-4c1d-8d55-7e0f3b9a2c22"}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def test_a_cursor_decodes_to_the_state_it_was_made_from() -> None:
    codec = CursorCodec(b"secret-one")

    cursor = codec.encode(STATE)

    assert codec.decode(cursor) == STATE
    assert "0123abcd" not in cursor  # opaque: not the plain JSON


def test_an_altered_body_is_refused() -> None:
    codec = CursorCodec(b"secret-one")
    _, mac = codec.encode(STATE).split(".")
    forged_body = b64(json.dumps({**STATE, "i": "00000000-0000-0000-0000-000000000000"}).encode())

    with pytest.raises(BadCursor):
        codec.decode(f"{forged_body}.{mac}")


def test_an_altered_mac_is_refused() -> None:
    codec = CursorCodec(b"secret-one")
    body, mac = codec.encode(STATE).split(".")
    flipped = ("A" if mac[0] != "A" else "B") + mac[1:]

    with pytest.raises(BadCursor):
        codec.decode(f"{body}.{flipped}")


# Non-ASCII, and a lone surrogate: before, TypeError and UnicodeEncodeError (a 502 through the API).
@pytest.mark.parametrize("cursor", ["", ".", "no-mac-at-all", "abc.", ".abc", "%%%.%%%", "°~.Dé", "ab\ud800.cd"])
def test_malformed_cursors_are_refused(cursor: str) -> None:
    with pytest.raises(BadCursor):
        CursorCodec(b"secret-one").decode(cursor)


def test_a_cursor_made_with_another_secret_is_refused() -> None:
    cursor = CursorCodec(b"secret-one").encode(STATE)

    with pytest.raises(BadCursor):
        CursorCodec(b"secret-two").decode(cursor)
