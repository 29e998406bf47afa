"""A message whose dead letter cannot be sent is retried with the backoff, then termed, never settled silently
nor left to loop. Before: the consumer logged "could not settle message" and neither acked, nak'ed nor termed
it, so NATS delivered it again every ack wait (30 s) for ever, across restarts, and no `cortex dlq list`
ever showed it."""

import logging
import uuid
from types import SimpleNamespace
from typing import cast

import pytest
from nats.aio.msg import Msg
from nats.errors import MaxPayloadError
from nats.js import JetStreamContext

from cortex_contracts.envelope import new_envelope
from cortex_messaging.consumer import ConsumerSpec, DurableConsumer
from cortex_messaging.delivery import Delivery, RecordedFailure

SPEC = ConsumerSpec(stream="MEMORY", durable="indexer-memory", filter_subjects=("memory.>",), max_deliver=3)
ORG = uuid.uuid4()
SUBJECT = f"memory.{ORG}.entry.remembered"


class FakeMsg:
    def __init__(self, data: bytes, delivered: int) -> None:
        self.subject, self.data, self.headers = SUBJECT, data, {"Nats-Msg-Id": "event-1"}
        self.metadata = SimpleNamespace(num_delivered=delivered, stream="MEMORY", sequence=SimpleNamespace(stream=77))
        self.settled: list[tuple[str, float | None]] = []

    async def ack(self) -> None:
        self.settled.append(("ack", None))

    async def nak(self, delay: float | None = None) -> None:
        self.settled.append(("nak", delay))

    async def term(self) -> None:
        self.settled.append(("term", None))

    async def in_progress(self) -> None:
        pass


class RefusingJetStream:
    """NATS refuses every letter (the one observed: too large for max_payload)."""

    def __init__(self) -> None:
        self._nc = SimpleNamespace(max_payload=1024 * 1024)
        self.attempts = 0

    async def publish(self, subject: str, payload: bytes, *, headers: dict[str, str]) -> None:
        self.attempts += 1
        raise MaxPayloadError


async def failed_as_recorded(delivery: Delivery) -> RecordedFailure:
    return RecordedFailure("extraction failed", "unreadable")


VALID = new_envelope(event_type="memory.entry.remembered", source="tests", org_id=ORG, data={}).to_wire()


@pytest.mark.parametrize(
    ("data", "delivered", "settled"),
    [
        (b"not an event", 1, ("nak", 1.0)),  # poison: its letter tried again after the first backoff
        (VALID, 2, ("nak", 5.0)),  # handled as failed: not acked before its copy is in the DLQ
        (b"not an event", 4, ("nak", 60.0)),  # past max_deliver, the letter alone is tried
        (b"not an event", 6, ("term", None)),  # twice max_deliver: given up
    ],
)
async def test_a_letter_that_cannot_be_sent_is_retried_then_given_up_at_error_level(
    data: bytes, delivered: int, settled: tuple[str, float | None], caplog: pytest.LogCaptureFixture
) -> None:
    js, msg = RefusingJetStream(), FakeMsg(data, delivered)
    consumer = DurableConsumer(cast("JetStreamContext", js), SPEC, failed_as_recorded)

    with caplog.at_level(logging.ERROR, logger="cortex_messaging.consumer"):
        await consumer._handle(cast("Msg", msg))

    assert js.attempts == 1  # the fault happened
    assert msg.settled == [settled]
    (record,) = caplog.records
    assert record.levelno == logging.ERROR
    assert "event event-1" in record.getMessage()
    assert "MEMORY sequence 77" in record.getMessage()
    assert ("given up" in record.getMessage()) == (settled[0] == "term")


class RecordingJetStream:
    def __init__(self) -> None:
        self._nc = SimpleNamespace(max_payload=1024 * 1024)
        self.headers: list[dict[str, str]] = []

    async def publish(self, subject: str, payload: bytes, *, headers: dict[str, str]) -> None:
        self.headers.append(headers)


async def test_a_letter_is_deduplicated_by_the_place_of_the_message_it_reports() -> None:
    """Lettered again after a lost ack, the same message makes the same letter id, which JetStream drops."""
    js = RecordingJetStream()
    consumer = DurableConsumer(cast("JetStreamContext", js), SPEC, failed_as_recorded)
    for delivered in (1, 2):
        await consumer._handle(cast("Msg", FakeMsg(b"not an event", delivered)))
    assert [headers["Nats-Msg-Id"] for headers in js.headers] == ["cortex-dlq-MEMORY/77", "cortex-dlq-MEMORY/77"]
