"""`cortex dlq` reads a letter back as the event it was: its own subject, headers and exact bytes."""

import uuid
from datetime import UTC, datetime

from nats.js.api import RawStreamMsg

from cortex_cli.dead_letters import letter_from, render
from cortex_messaging.dead_letter import DeadLetter

SUBJECT = f"kb.{uuid.uuid4()}.document.upserted"


def stored(payload: bytes) -> RawStreamMsg:
    letter = DeadLetter(SUBJECT, "indexer-kb", "poison message", "invalid\nevent", 1, {"traceparent": "00-x"}, payload)
    return RawStreamMsg(subject=f"dlq.{SUBJECT}", seq=42, data=letter.record(), time=datetime(2026, 12, 2, tzinfo=UTC))


def test_text_and_binary_payloads_come_back_byte_for_byte() -> None:
    for payload in (b'{"id": "e1", "data": {}}', b"\xff\xfe\x00\x81 binary"):
        letter = letter_from(stored(payload))

        assert letter.payload == payload
        assert (letter.sequence, letter.subject, letter.reason) == (42, SUBJECT, "poison message")
        assert letter.headers == {"traceparent": "00-x"}


def test_the_listing_is_one_line_a_letter() -> None:
    assert render([]) == "no dead letters"
    assert render([letter_from(stored(b"{}"))]) == (
        f"      42  2026-12-02T00:00:00+00:00  {SUBJECT}  poison message: invalid event"
    )
