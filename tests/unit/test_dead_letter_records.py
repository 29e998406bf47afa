"""`cortex dlq` reads a letter back as the event it was: its own subject, headers and exact bytes. A letter
always fits in one NATS message, and is filed under its organization's id as `cortex dlq` looks for it."""

import base64
import json
import uuid
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import cast

import pytest
from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg

from cortex_cli.dead_letters import letter_from, render, render_json
from cortex_messaging.dead_letter import DeadLetter, send_dead_letter
from cortex_messaging.publisher import MessageTooLarge, message_bytes

SUBJECT = f"kb.{uuid.uuid4()}.document.upserted"
HEADERS = {"traceparent": "00-x", "Nats-Msg-Id": "e1"}
LIMIT = 64 * 1024  # the test's max_payload


def dead_letter(payload: bytes, subject: str = SUBJECT, headers: dict[str, str] | None = None) -> DeadLetter:
    return DeadLetter(subject, "indexer-kb", "poison message", "invalid\nevent", 1, headers or HEADERS, payload)


def stored(record: bytes) -> RawStreamMsg:
    return RawStreamMsg(subject=f"dlq.{SUBJECT}", seq=42, data=record, time=datetime(2026, 12, 2, tzinfo=UTC))


class CapturingJetStream:
    def __init__(self, max_payload: int) -> None:
        self._nc = SimpleNamespace(max_payload=max_payload)
        self.published: list[tuple[str, bytes, dict[str, str]]] = []

    async def publish(self, subject: str, payload: bytes, *, headers: dict[str, str]) -> None:
        self.published.append((subject, payload, headers))


async def sent(letter: DeadLetter, max_payload: int = LIMIT) -> tuple[str, bytes, dict[str, str]]:
    """What `send_dead_letter` publishes: subject, record, headers."""
    js = CapturingJetStream(max_payload)
    await send_dead_letter(cast("JetStreamContext", js), letter)
    (published,) = js.published
    return published


def test_text_and_binary_payloads_come_back_byte_for_byte() -> None:
    for payload in (b'{"id": "e1", "data": {}}', b"\xff\xfe\x00\x81 binary"):
        letter = letter_from(stored(dead_letter(payload).record()))

        assert letter.payload == payload
        assert (letter.sequence, letter.subject, letter.reason) == (42, SUBJECT, "poison message")
        assert letter.headers == HEADERS
        assert letter.cut_from is None


def test_the_listing_is_one_line_a_letter() -> None:
    assert render([]) == "no dead letters"
    assert render([letter_from(stored(dead_letter(b"{}").record()))]) == (
        f"      42  2026-12-02T00:00:00+00:00  {SUBJECT}  -  poison message: invalid event"
    )


def listed(event: object) -> str:
    return render([letter_from(stored(dead_letter(json.dumps(event).encode()).record()))])


def test_the_listing_names_the_file_or_document_a_letter_is_about() -> None:
    document = str(uuid.uuid4())
    upload = {"subject": "u1", "data": {"uploadId": "u1", "filename": "Q3 plan.pdf", "documentId": document}}
    assert '  file "Q3 plan.pdf"  poison message' in listed(upload)
    assert f'  document "{document}"  poison message' in listed({"subject": document, "data": {"documentId": document}})
    assert '  entry "e-7"  ' in listed({"data": {"entryId": "e-7"}})
    assert '  subject "w-1"  ' in listed({"subject": "w-1", "data": {"workId": "w-1"}})
    for not_an_event in ([1, 2], "text", {"data": ["x"]}, {"data": {"filename": 3}}):
        assert f"  {SUBJECT}  -  poison message" in listed(not_an_event)
    cut = render([letter_from(stored(dead_letter(b'{"data": {"filena').record()))])
    assert f"  {SUBJECT}  -  poison message" in cut


def test_names_that_differ_only_in_spaces_list_apart_and_a_long_one_says_it_was_cut() -> None:
    """QA 39: NEL, a no-break space and a double space each printed as one plain space."""
    names = ["a  b.txt", "a\u00a0b.txt", "a\x85b.txt", "a\u2028b.txt", "a\u3000b.txt", "a b.txt"]
    shown = [listed({"data": {"filename": name}}).split("  file ")[1].split("  poison")[0] for name in names]
    assert len(set(shown)) == len(names), shown
    assert shown[0] == '"a  b.txt"'
    assert shown[2] == '"a\\x85b.txt"'
    long_name = "L" * 200 + ".pdf"
    assert f'  file "{"L" * 120}"…  poison message' in listed({"data": {"filename": long_name}})


def test_the_listing_shows_control_characters_escaped_not_to_the_terminal() -> None:
    """A file name is the uploader's: an escape sequence in it must not reach the operator's terminal."""
    line = listed({"data": {"filename": "a\x1b[2J\u202ebad.pdf\nb"}})
    assert "\x1b" not in line and "\u202e" not in line and "\n" not in line
    assert 'file "a\\u001b[2J\\u202ebad.pdf\\nb"' in line


def test_the_json_listing_gives_scripts_every_field_whole() -> None:
    upload = {"data": {"filename": "a\x1b[2J  b.pdf", "documentId": "d1"}}
    error = "x" * 300  # the text listing cuts it at 160
    record = DeadLetter(SUBJECT, "indexer-kb", "poison message", error, 1, HEADERS, json.dumps(upload).encode())
    binary = dead_letter(b"\xff\xfe not UTF-8")
    first, second = render_json([letter_from(stored(record.record())), letter_from(stored(binary.record()))]).split(
        "\n"
    )

    listed = json.loads(first)
    assert listed["about"] == {"kind": "file", "name": "a\x1b[2J  b.pdf"}
    assert (listed["sequence"], listed["subject"], listed["error"]) == (42, SUBJECT, error)
    assert listed["time"] == "2026-12-02T00:00:00+00:00"
    assert listed["headers"] == HEADERS
    assert json.loads(listed["payload"]) == upload
    assert (listed["payloadEncoding"], listed["payloadTruncated"], listed["originalPayloadBytes"]) == (
        "utf-8",
        False,
        None,
    )
    assert "\x1b" not in first  # JSON escapes it: the terminal never sees it
    other = json.loads(second)
    assert other["about"] is None
    assert base64.b64decode(other["payload"]) == b"\xff\xfe not UTF-8"
    assert other["payloadEncoding"] == "base64"
    assert render_json([]) == ""


async def test_text_is_not_escaped_into_a_larger_letter() -> None:
    """Before: each "é" took 6 bytes (`\\u00e9`), so a 6 MB event made an 18 MB letter that NATS refused."""
    payload = json.dumps({"content": "é" * 100_000, "note": "a lone surrogate, \\ud800"}, ensure_ascii=False).encode()

    _, record, _ = await sent(dead_letter(payload), max_payload=1024 * 1024)

    assert len(record) < len(payload) + 1_000
    assert "payloadTruncated" not in json.loads(record)
    assert letter_from(stored(record)).payload == payload


async def test_an_error_with_a_lone_surrogate_is_still_a_letter() -> None:
    letter = DeadLetter(SUBJECT, "indexer-kb", "poison message", "bad \ud800 text", 1, HEADERS, b"{}")

    _, record, _ = await sent(letter)

    assert json.loads(record)["error"] == "bad \ud800 text"


@pytest.mark.parametrize(
    "payload",
    [
        json.dumps({"content": "é" * 200_000}, ensure_ascii=False).encode(),
        ('"\\\n\x01' * 50_000).encode(),  # each character escaped in the record, to 2 or 6 bytes
        b"\xff\x00" * 100_000,  # base64
        b"x" * (LIMIT - 100),  # the event fitted; with the letter's headers and fields it no longer does
    ],
    ids=["non-ascii", "escaped", "binary", "just-under"],
)
async def test_a_letter_over_max_payload_keeps_the_start_of_its_event_and_says_so(payload: bytes) -> None:
    """Before: the letter was published as it was; NATS refused it and the event was redelivered for ever."""
    subject, record, headers = await sent(dead_letter(payload))

    assert message_bytes(record, headers) <= LIMIT
    assert subject == f"dlq.{SUBJECT}"
    fields = json.loads(record)
    assert (fields["payloadTruncated"], fields["originalPayloadBytes"]) == (True, len(payload))
    assert (fields["subject"], fields["reason"], fields["error"]) == (SUBJECT, "poison message", "invalid\nevent")
    assert fields["headers"] == HEADERS
    assert headers["Cortex-Dlq-Reason"] == "poison message"
    letter = letter_from(stored(record))
    assert letter.cut_from == len(payload)
    assert payload.startswith(letter.payload)
    listed = json.loads(render_json([letter]))
    assert (listed["payloadTruncated"], listed["originalPayloadBytes"]) == (True, len(payload))
    assert len(letter.payload) > LIMIT // 8


async def test_a_letter_whose_headers_alone_are_too_large_is_refused_before_nats_sees_it() -> None:
    """Over max_payload by its headers, a message makes the server close the connection."""
    with pytest.raises(MessageTooLarge):
        await sent(dead_letter(b"{}", headers={"Padding": "y" * LIMIT}))


async def test_a_letter_is_filed_under_its_organization_id_in_lower_case() -> None:
    """Before: `memory.DE5B31CF-….entry.remembered` went to `dlq.memory.DE5B31CF-….`, which no organization's
    `cortex dlq list` (`dlq.*.<orgId>.>`, lower case) showed."""
    org = uuid.uuid4()
    for token in (str(org).upper(), str(org), org.hex.upper()):
        subject = f"memory.{token}.entry.remembered"

        dlq_subject, record, headers = await sent(dead_letter(b"{}", subject))

        assert dlq_subject == f"dlq.memory.{org}.entry.remembered"
        assert json.loads(record)["subject"] == headers["Cortex-Dlq-Subject"] == subject  # as it came
    for other in ("kb.not-a-uuid.document.upserted", "nodots"):
        assert (await sent(dead_letter(b"{}", other)))[0] == f"dlq.{other}"
