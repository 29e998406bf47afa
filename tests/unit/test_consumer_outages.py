"""A handler failing because a dependency is down is tried again in the same delivery until it answers: the
message is neither counted towards max_deliver nor dead-lettered. Before (QA 46), a 4-minute PostgreSQL
freeze sent all 46 events in flight to the DLQ, each with a traceback, after their five deliveries."""

import asyncio
import logging
from typing import cast

import pytest
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from cortex_messaging.consumer import ConsumerSpec, DurableConsumer
from cortex_messaging.delivery import Delivery, RecordedFailure
from tests.unit.test_dead_letter_send_failures import VALID, FakeMsg, RefusingJetStream


class Down(Exception):
    """What the spec below takes for a dependency that is down."""


SPEC = ConsumerSpec(
    stream="MEMORY",
    durable="indexer-memory",
    filter_subjects=("memory.>",),
    max_deliver=3,
    unavailable=lambda exc: isinstance(exc, Down),
    outage_retry_seconds=(0.01, 0.04),
)


class Outage:
    """A handler that fails `times` times with `error`, then handles the message."""

    def __init__(self, times: int, error: Exception) -> None:
        self.times, self.error, self.calls = times, error, 0

    async def __call__(self, delivery: Delivery) -> RecordedFailure | None:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return None


async def test_an_outage_is_waited_out_in_the_same_delivery_even_at_its_last(caplog: pytest.LogCaptureFixture) -> None:
    msg, handler = FakeMsg(VALID, delivered=3), Outage(10, Down("connection refused"))
    consumer = DurableConsumer(cast("JetStreamContext", RefusingJetStream()), SPEC, handler)

    with caplog.at_level(logging.INFO, logger="cortex_messaging.consumer"):
        await consumer._handle(cast("Msg", msg))

    assert msg.settled == [("ack", None)]  # not dead-lettered at max_deliver, not nak'ed
    assert handler.calls == 11
    said = [record.getMessage() for record in caplog.records]
    assert said == [
        "indexer-memory: waiting for what is down to answer again: connection refused",
        "indexer-memory: available again; the events that waited go on",
    ]


async def test_any_other_failure_is_retried_by_redelivery_as_before() -> None:
    msg, handler = FakeMsg(VALID, delivered=1), Outage(1, ValueError("a bug"))
    consumer = DurableConsumer(cast("JetStreamContext", RefusingJetStream()), SPEC, handler)
    await consumer._handle(cast("Msg", msg))
    assert (msg.settled, handler.calls) == ([("nak", 1.0)], 1)


async def test_a_consumer_that_stops_gives_the_waiting_message_back() -> None:
    msg, handler = FakeMsg(VALID, delivered=1), Outage(1000, Down("connection refused"))
    consumer = DurableConsumer(cast("JetStreamContext", RefusingJetStream()), SPEC, handler)
    settling = asyncio.create_task(consumer._handle(cast("Msg", msg)))
    await asyncio.sleep(0.1)
    consumer._stop.set()
    await asyncio.wait_for(settling, 2)
    assert msg.settled == [("nak", 1.0)]  # delivered again, to this copy once restarted or to another
