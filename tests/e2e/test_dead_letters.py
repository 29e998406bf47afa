"""Events the indexer can never handle end in the DLQ with the reason; the events after them still flow."""

import base64
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from cortex_contracts import subjects
from tests.cli_runs import cli
from tests.conftest import Org
from tests.dlq import read_dead_letters
from tests.events import IndexedWatcher, publish_remembered, publish_upsert, remembered_event, search_ids, upsert_event
from tests.infrastructure import Infrastructure
from tests.services import RunningServices
from tests.spans import new_trace, wait_handled

pytestmark = pytest.mark.e2e

CONSUMER = "indexer-kb"


@dataclass(frozen=True)
class Malformed:
    subject: str
    payload: bytes
    error: str  # what the dead letter's error must say


def invalid_json(org_id: uuid.UUID) -> Malformed:
    return Malformed(subjects.kb_document_upserted(org_id), b'{"id": "1", "type": ', "invalid event envelope")


def not_utf8(org_id: uuid.UUID) -> Malformed:
    return Malformed(subjects.kb_document_upserted(org_id), b"\xff\xfe\x00\x81 binary", "invalid event envelope")


def missing_title(org_id: uuid.UUID) -> Malformed:
    event = upsert_event(org_id, uuid.uuid4(), title="t", body="b", version=1)
    data = {key: value for key, value in event.data.items() if key != "title"}
    wire = event.model_copy(update={"data": data}).to_wire()
    return Malformed(subjects.kb_document_upserted(org_id), wire, "invalid kb.document.upserted payload")


def version_beyond_bigint(org_id: uuid.UUID) -> Malformed:
    """Before, PostgreSQL refused it at the INSERT: retried as a fault, then dead-lettered minutes later."""
    event = upsert_event(org_id, uuid.uuid4(), title="t", body="b", version=1)
    wire = event.model_copy(update={"data": event.data | {"version": 2**63}}).to_wire()
    return Malformed(subjects.kb_document_upserted(org_id), wire, "less than or equal to 9223372036854775807")


def version_as_text(org_id: uuid.UUID) -> Malformed:
    """Before: "3" (or true, or 2.0) was taken as a version."""
    event = upsert_event(org_id, uuid.uuid4(), title="t", body="b", version=1)
    wire = event.model_copy(update={"data": event.data | {"version": "3"}}).to_wire()
    return Malformed(subjects.kb_document_upserted(org_id), wire, "Input should be a valid integer")


def updated_after_the_event(org_id: uuid.UUID) -> Malformed:
    """Before: stored, and year 9999 put the document on top of the newest-first feed for good."""
    event = upsert_event(org_id, uuid.uuid4(), title="t", body="b", version=1, updatedAt="9999-12-31T23:59:59Z")
    return Malformed(
        subjects.kb_document_upserted(org_id), event.to_wire(), "updatedAt 9999-12-31T23:59:59+00:00 is after"
    )


def updated_in_year_one(org_id: uuid.UUID) -> Malformed:
    """Before: stored as -infinity (asyncpg's datetime.min)."""
    event = upsert_event(org_id, uuid.uuid4(), title="t", body="b", version=1, updatedAt="0001-01-01T00:00:00Z")
    return Malformed(subjects.kb_document_upserted(org_id), event.to_wire(), "is before 1970-01-01")


def unknown_action(org_id: uuid.UUID) -> Malformed:
    event = upsert_event(org_id, uuid.uuid4(), title="t", body="b", version=1)
    wire = event.model_copy(update={"type": "kb.document.exploded"}).to_wire()
    return Malformed(f"kb.{org_id}.document.exploded", wire, "unknown event 'document.exploded'")


def type_not_of_its_subject(org_id: uuid.UUID) -> Malformed:
    """Before: indexed as the subject said, whatever the envelope's type."""
    event = upsert_event(org_id, uuid.uuid4(), title="t", body="b", version=1)
    wire = event.model_copy(update={"type": "memory.entry.remembered"}).to_wire()
    return Malformed(subjects.kb_document_upserted(org_id), wire, "event type 'memory.entry.remembered' does not match")


@pytest.mark.parametrize(
    "malformed",
    [
        invalid_json,
        not_utf8,
        missing_title,
        version_beyond_bigint,
        version_as_text,
        updated_after_the_event,
        updated_in_year_one,
        unknown_action,
        type_not_of_its_subject,
    ],
)
async def test_a_malformed_event_is_dead_lettered_and_the_next_event_still_indexed(
    malformed: Callable[[uuid.UUID], Malformed], org: Org, js: JetStreamContext, nats_client: NATS
) -> None:
    bad = malformed(org.id)
    message_id = f"bad-{uuid.uuid4()}"
    watcher = await IndexedWatcher().start(nats_client, org.id)
    good = uuid.uuid4()

    await js.publish(bad.subject, bad.payload, headers={"Nats-Msg-Id": message_id})
    await publish_upsert(js, upsert_event(org.id, good, title="After the bad one", body="Still indexed.", version=1))

    await watcher.wait_for(good, 1)
    await watcher.stop()
    (letter,) = await read_dead_letters(js, org.id, 1)

    assert letter.subject == f"dlq.{bad.subject}"
    assert letter.headers["Cortex-Dlq-Reason"] == "poison message"
    assert letter.headers["Cortex-Dlq-Subject"] == bad.subject
    assert letter.headers["Cortex-Dlq-Consumer"] == CONSUMER
    assert bad.error in letter.headers["Cortex-Dlq-Error"]
    # Not the event's dedup id (a replayed event failing again is a new letter), but its message's place.
    assert letter.headers["Nats-Msg-Id"].startswith("cortex-dlq-KB/")
    record = letter.record
    assert record["reason"] == "poison message"
    assert record["subject"] == bad.subject
    assert record["consumer"] == CONSUMER
    assert record["deliveries"] == 1
    assert bad.error in record["error"]
    assert record["headers"]["Nats-Msg-Id"] == message_id
    if record["payloadEncoding"] == "base64":
        assert base64.b64decode(record["payload"]) == bad.payload
    else:
        assert record["payloadEncoding"] == "utf-8"
        assert record["payload"].encode() == bad.payload
    assert await search_ids(org.member) == [str(good)]


async def test_missing_title_names_the_field_in_the_dead_letter(org: Org, js: JetStreamContext) -> None:
    bad = missing_title(org.id)
    await js.publish(bad.subject, bad.payload)

    (letter,) = await read_dead_letters(js, org.id, 1)

    assert "title" in letter.record["error"]
    assert "Field required" in letter.record["error"]
    assert json.loads(letter.record["payload"])["data"].get("title") is None


async def test_an_event_for_an_unknown_organization_is_retried_with_backoff_then_dead_lettered(
    services: RunningServices, js: JetStreamContext, spans: InMemorySpanExporter
) -> None:
    unknown_org, document = uuid.uuid4(), uuid.uuid4()
    event = upsert_event(unknown_org, document, title="Orphan", body="No organization owns me.", version=1)

    with new_trace("test: publish for an unknown organization") as trace_id:
        await publish_upsert(js, event)
    (letter,) = await read_dead_letters(js, unknown_org, 1, timeout=40)

    assert letter.subject == f"dlq.{subjects.kb_document_upserted(unknown_org)}"
    assert letter.headers["Cortex-Dlq-Reason"] == "max_deliver exceeded"
    assert letter.headers["Cortex-Dlq-Deliveries"] == "3"
    assert letter.record["reason"] == "max_deliver exceeded"
    assert letter.record["deliveries"] == 3
    assert letter.record["error"] == f"UnknownOrganization: no organization {unknown_org} (yet)"
    assert json.loads(letter.record["payload"])["id"] == event.id

    # The redeliveries happened, each after the configured backoff (1 s, then 5 s).
    deliveries = sorted(await wait_handled(spans, trace_id, count=3), key=lambda span: span.start_time or 0)
    assert len(deliveries) == 3
    assert all(span.status.status_code is StatusCode.ERROR for span in deliveries)
    starts = [(span.start_time or 0) / 1e9 for span in deliveries]
    assert starts[1] - starts[0] >= 0.9
    assert starts[2] - starts[1] >= 4.5


async def test_a_large_event_of_non_ascii_text_is_dead_lettered_whole(org: Org, js: JetStreamContext) -> None:
    """6 MB of "é" in a memory entry (too long to remember). Before: its letter, each "é" escaped to 6 bytes,
    was 18 MB, over NATS's max_payload (8 MB here): the event was redelivered every 30 s, for ever, and never
    reached the DLQ."""
    entry = remembered_event(org.id, "to be replaced")
    event = entry.model_copy(update={"data": entry.data | {"content": "é" * 3_000_000}})
    await publish_remembered(js, event)

    (letter,) = await read_dead_letters(js, org.id, 1, stream="memory")

    assert "content" in letter.record["error"]
    assert "payloadTruncated" not in letter.record
    assert letter.record["payload"].encode() == event.to_wire()


async def test_an_event_too_large_for_its_letter_is_kept_in_part_and_not_replayed(
    org: Org,
    js: JetStreamContext,
    nats_client: NATS,
    migrated: Infrastructure,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An event just under max_payload: with the letter's fields and headers, too large. Before: the letter was
    never sent, and the event redelivered for ever; now it keeps the start of the event, and says so."""
    untitled = missing_title(org.id)
    event = json.loads(untitled.payload)
    event["data"]["body"] = "x" * (nats_client.max_payload - len(untitled.payload) - 200)
    wire = json.dumps(event).encode()
    await js.publish(untitled.subject, wire, headers={"Nats-Msg-Id": event["id"]})

    (letter,) = await read_dead_letters(js, org.id, 1)

    assert (letter.record["payloadTruncated"], letter.record["originalPayloadBytes"]) == (True, len(wire))
    assert wire.startswith(letter.record["payload"].encode())
    assert letter.record["reason"] == "poison message"
    assert "title" in letter.record["error"]
    assert letter.record["subject"] == untitled.subject
    assert letter.record["headers"] == {"Nats-Msg-Id": event["id"]}
    # Listed like any other; but it cannot be sent again as the event it was, so it is not, and it stays.
    assert await cli(migrated, ["dlq", "list", "--org", org.slug]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    number = line.split()[0]
    for which in ([number], ["--all"]):
        assert await cli(migrated, ["dlq", "replay", "--org", org.slug, *which]) == 1
        assert capsys.readouterr() == (
            "",
            f"error: letter {number} holds only the start of its event ({len(wire):,} bytes, too large for the "
            "DLQ): not replayed\n",
        )
    assert await cli(migrated, ["dlq", "list", "--org", org.slug]) == 0
    assert capsys.readouterr().out.splitlines() == [line]
